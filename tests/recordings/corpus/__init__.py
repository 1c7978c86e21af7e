"""The corpus's real recordings (tests/corpus/README.md): job scripts, the training job, the recorder."""
