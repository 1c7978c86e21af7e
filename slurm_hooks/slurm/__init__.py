"""Slurm behind one small Protocol: the real one drives scontrol/sacct/sacctmgr; tests use the real
daemons (tests/devcluster.py) or inject a fake for the pure-logic cases."""
