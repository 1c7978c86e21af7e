"""Collection: this node's part of the job's evidence bundle, written into the spool.

kernel.py     the kernel lines of the job's window (journal, /dev/kmsg or kernel_log_file), the one window setting
job_logs.py   the job's stdout/stderr, read with the job user's rights, never through a link
node_part.py  node facts and kernel lines; job.json, written by the party that merges
kmsg_follow.py  `slurm-hooks kmsg-follow`: /dev/kmsg into a rotated file for `kernel_log_file`
                (kmsg_device.py: the device behind a Protocol; kmsg_record.py: one record, one
                line; kmsg_output.py: the file, all-or-nothing appends and rotation)
Analysis is `slurm_hooks.diagnose`; delivery (outbox, annotation) is `slurm_hooks.deliver`.
"""
