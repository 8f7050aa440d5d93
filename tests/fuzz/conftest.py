"""`--fuzz-long`: a longer fuzz run, ten times the cases of the usual one."""


def pytest_addoption(parser):
    parser.addoption(
        "--fuzz-long", action="store_true", default=False, help="run ten times the usual fuzz cases"
    )
