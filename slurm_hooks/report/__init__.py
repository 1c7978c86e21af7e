"""`slurm-hooks report`: the admin audit over Slurm accounting (read -> aggregate -> render)."""
