from slurm_hooks.cli import main

raise SystemExit(main())
