"""Security tests: attacks driven through the real agent loop (the in-process scripted provider, or the real
`yeetui` binary against the fake LLM server). The unit tests' Runtime fixtures are shared."""

from tests.unit.conftest import front_end, project_dir, runtime, runtime_env  # noqa: F401  (fixtures)
