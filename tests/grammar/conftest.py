"""Shared setup for the grammar tests: the case sets (built once per session),
the tokenizers (infer's and llguidance's, built once per session), and a
terminal summary of what was compared, so the information the tests print
(refusals, disagreements with llguidance) shows even when they pass."""
import os
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.dirname(HERE))

SUMMARY = []  # (title, [lines]) appended by the tests


def pytest_terminal_summary(terminalreporter):
    for title, lines in SUMMARY:
        terminalreporter.write_sep("-", title)
        for line in lines:
            terminalreporter.write_line(line)


def _need(module, what):
    try:
        __import__(module)
    except ImportError:
        pytest.skip(f"{module} is not installed: {what} (see tests/requirements.txt)")


@pytest.fixture(scope="session")
def hand_cases():
    _need("jsonschema", "the labels of the JSON cases")
    import cases_hand
    return cases_hand.build()


@pytest.fixture(scope="session")
def bfcl_cases():
    """{"default": (cases, stats), "shared": (cases, stats)}: the sample for the
    embedded default model and the (smaller) one for each ../shared tokenizer."""
    _need("jsonschema", "the labels of the JSON cases")
    import cases_bfcl
    from grammar_harness import FULL, N_BFCL, N_BFCL_SHARED
    try:
        big = cases_bfcl.build(full=FULL, n_schemas=N_BFCL)
        small = big if FULL or N_BFCL_SHARED == N_BFCL else cases_bfcl.build(n_schemas=N_BFCL_SHARED)
    except cases_bfcl.BfclUnavailable as e:
        pytest.skip(f"bfcl-eval data unavailable: {e}")
    return {"default": big, "shared": small}


class LlgTokenizers:
    """llguidance tokenizers by tokenizer.json folder, built on first use."""

    def __init__(self):
        self.cache = {}

    def get(self, d):
        if d not in self.cache:
            import oracle_llg
            self.cache[d] = oracle_llg.load_tokenizer(d)
        return self.cache[d]


@pytest.fixture(scope="session")
def llg_tokenizers():
    return LlgTokenizers()
