"""pytest configuration for the runtime (verify) tests."""


def pytest_configure(config):
    config.addinivalue_line("markers", "slow: launches torchrun or subprocess pipelines (still run in CI)")
