"""Counted checks for the CLI test scripts: check() prints an ok or FAILED line (with a detail on
failure), skip() a skipped one, finish() the counts, and exits non-zero when any check failed."""
import sys

counts = {"passed": 0, "failed": 0, "skipped": 0}


def check(ok, what, detail=""):
    counts["passed" if ok else "failed"] += 1
    print(f"ok: {what}" if ok else f"FAILED: {what}" + (f"\n    {detail}" if detail else ""))


def skip(what):
    counts["skipped"] += 1
    print(f"skipped: {what}")


def finish():
    print(f"{counts['passed']} passed, {counts['failed']} failed, {counts['skipped']} skipped")
    sys.exit(1 if counts["failed"] else 0)
