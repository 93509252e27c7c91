"""What reads a log and reports: dump, verify, analyze, diff, groups and the HTML report."""
