"""Dreaming on a schedule: the triggers `memdream dream --if-needed` checks (triggers.py), and the
user crontab entry (cron.py) or systemd user timer (systemd.py) that runs it, installed and read back
by `memdream schedule` (manage.py, status.py). docs/scheduling.md describes the rule and the files.
"""
