"""Placement: where a job (or a sweep) would finish first, or cost least, among the allocations
its launcher may use. Pure Python (no Django): the service (launcher/services/placement.py)
gathers the facts (the recommender's prediction, the ledger, the scheduler's start estimate
through the backend seam, the facility's queue and history) and these modules turn them into
an answer (docs/placement.md):

interval.py  one run's time, calibrated on measured runs, with its interval
wait.py      the wait before it starts: the scheduler's, the slots and the queue, the history
rank.py      one allocation's answer (`Option`), the ranking and the reasons in words
record.py    a ranking as JSON: the API's answer and what a placed job keeps
accuracy.py  predicted against real wait and finish, per facility
words.py     durations, clock times and money as the answers say them
"""
