"""Bind every Gherkin scenario under features/ to the step library in tests/steps/."""

from pytest_bdd import scenarios

scenarios(".")
