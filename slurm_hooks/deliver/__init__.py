"""Delivery: the annotation outbox (outbox.py) and getting its records into accounting (annotate.py)."""
