"""The fuzz harnesses in the normal test run: every input that ever failed is replayed, then each
harness runs for ``FASTBPE_FUZZ_SECONDS`` (default 1 s; CI's sanitizer lane gives them longer).

A failure names the input, saved under ``tests/fuzz/corpus/<harness>/``: commit it with the fix,
and from then on it is replayed here. Harnesses whose data or peer library is absent are skipped,
saying what is missing.
"""
import pytest

from tests.fuzz import engine, targets


@pytest.fixture(scope="module", params=targets.TARGETS, ids=lambda t: t.name)
def target(request):
    harness = request.param
    try:
        harness.setup()
    except engine.Unavailable as exc:
        pytest.skip(str(exc))
    yield harness
    harness.teardown()


def test_inputs_that_once_failed_pass(target):
    engine.replay(target, engine.corpus_files(target.name))


def test_fuzz(target):
    stats = engine.fuzz(target, engine.budget())
    assert stats.executions > 0
