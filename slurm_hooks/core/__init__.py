"""Plain helpers every layer may use, importing nothing else of the package: time parsing, the clock
Protocol, bounded and atomic I/O, symlink-proof paths, bounded subprocesses, the state/spool layout,
and the JSON-lines log."""
