"""Summarise the JUnit files written by ``ansible-test sanity --junit``.

Usage: junit_summary.py JUNIT_DIR LABEL [LOG]

Prints the errors of failed tests, the reason of tests skipped for a reason
other than having no files to check, and a closing line
``sanity: N passed, N failed, N skipped``.  Exits 1 when no result was found.
"""

from __future__ import annotations

import glob
import os
import re
import sys
import xml.etree.ElementTree as ET

NOTHING_TO_TEST = "No tests applicable."
RUNNING = re.compile(r'^Running sanity test "([^"]+)"')
MISSING_PROGRAM = re.compile(r'^WARNING: (Required program "[^"]+" not found\.)')


def missing_programs(log_path):
    """Map test name to reason for tests skipped because a program is missing.

    ansible-test records those tests as having nothing to check; only its
    console output tells the difference.
    """
    reasons = {}
    current = None
    with open(log_path, encoding="utf-8", errors="replace") as log:
        for line in log:
            match = RUNNING.match(line)
            if match:
                current = match.group(1)
                continue
            match = MISSING_PROGRAM.match(line)
            if match and current:
                reasons[current] = match.group(1)
    return reasons


def main():
    """Entry point."""
    junit_dir, label = sys.argv[1:3]
    missing = missing_programs(sys.argv[3]) if len(sys.argv) > 3 else {}
    passed, failed, skipped, idle = [], [], [], []

    for path in sorted(glob.glob(os.path.join(junit_dir, "ansible-test-sanity-*.xml"))):
        for case in ET.parse(path).getroot().iter("testcase"):
            name = re.sub(r"-python-[0-9.]+$", "", case.get("name"))
            failure = case.find("failure")
            if failure is None:
                failure = case.find("error")
            skip = case.find("skipped")

            if failure is not None:
                failed.append(name)
                print("FAILED %s: %s" % (name, failure.get("message", "")))
                for line in (failure.text or "").splitlines():
                    print("  " + line)
            elif skip is not None:
                reason = (skip.text or skip.get("message") or "").strip()
                reason = missing.get(name, reason)
                if reason == NOTHING_TO_TEST:
                    idle.append(name)
                else:
                    skipped.append(name)
                    print("SKIPPED %s: %s" % (name, reason))
            else:
                passed.append(name)

    if not passed + failed + skipped + idle:
        print("sanity: no ansible-test results found in %s" % junit_dir)
        sys.exit(1)

    print(
        "ansible-test sanity (%s): %d tests; no files to check for: %s"
        % (label, len(passed + failed + skipped + idle), ", ".join(idle) or "-")
    )
    # Nothing to check counts as passed, like ansible-test itself does.
    print("sanity: %d passed, %d failed, %d skipped" % (len(passed) + len(idle), len(failed), len(skipped)))


if __name__ == "__main__":
    main()
