"""slurm-hooks: Slurm Prolog/Epilog that records the GPU stack and explains why GPU jobs died."""

__version__ = "0.1.0"
