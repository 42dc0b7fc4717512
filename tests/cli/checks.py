"""Counted checks for the CLI test scripts: each prints ok/FAILED/skipped with what it checked;
finish() prints the counts and exits non-zero when any check failed."""
import sys

counts = {"passed": 0, "failed": 0, "skipped": 0}


def check(ok, what):
    counts["passed" if ok else "failed"] += 1
    print(f"{'ok' if ok else 'FAILED'}: {what}")


def skip(what):
    counts["skipped"] += 1
    print(f"skipped: {what}")


def finish():
    print(f"{counts['passed']} passed, {counts['failed']} failed, {counts['skipped']} skipped")
    sys.exit(1 if counts["failed"] else 0)
