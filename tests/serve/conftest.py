"""The tests of `ingle serve` under the official openai SDK (scripts/test-serve)."""


def pytest_configure(config):
    config.addinivalue_line(
        "markers",
        "extended: slow and rarely broken: run by `scripts/test --extended serve` "
        "(scripts/test-serve --extended), not in CI's tier (docs/testing.md)")
