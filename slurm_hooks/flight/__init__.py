"""PyTorch's flight recorder dumps, joined with Slurm's view of the job (docs/flight-recorder.md).

setup.py     the Prolog's part: a per-job dump directory the job's user owns, the TaskProlog's exports
decode.py    one dump's bytes -> plain data: pickle through an opcode allow-list, or JSON
digest.py    one dump -> per process group the last collective each rank entered and completed
scan.py      the reader child (the job user's rights, no links, bounded): a dump directory -> digests
collect.py   the Epilog's part: run the reader, keep the digest in the bundle, retention of the dumps
analysis.py  every node's digests -> the ranks behind the rest and the ranks without a dump
Nothing here is imported when `flight_recorder: off`.
"""
