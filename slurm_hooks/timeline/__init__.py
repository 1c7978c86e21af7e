"""Turn a bundle's files into one ordered list of events: prefixes, clocks, scanning, placing."""
