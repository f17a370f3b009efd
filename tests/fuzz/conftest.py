"""Reports what the fuzz harnesses ran: executions, seconds and distinct outcomes per harness."""
from tests.fuzz import engine


def pytest_terminal_summary(terminalreporter):
    if engine.STATS:
        terminalreporter.write_sep("-", "fuzzing")
        for stats in engine.STATS.values():
            terminalreporter.write_line(repr(stats))
