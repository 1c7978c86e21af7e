"""Slurm hooks. Each runs under `run_guarded`: bounded time, exit 0 on its own failure, a log line."""
