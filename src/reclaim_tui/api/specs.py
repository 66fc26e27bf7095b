"""The jobs the Python API is given, as the jobs the ledger stores: a dict is
checked as a jobs file's line is, a JobSpec as the line it would be, and a
batch as a file is (a key used twice, a cycle of `previous` keys), by the
one check the CLI's jobs files get (core/jobsfile.py)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from reclaim_tui.core.jobsfile import check_jobs
from reclaim_tui.core.models import JobSpec
from reclaim_tui.errors import ConfigError

__all__ = ["JobLike", "checked_specs", "job_list", "spec_fields"]

#: A job to submit: a JobSpec, or a dict shaped as a jobs file's line.
JobLike = JobSpec | Mapping[str, Any]


def job_list(jobs: JobLike | Iterable[JobLike]) -> list[JobLike]:
    """One job or many, as a list."""
    if isinstance(jobs, JobSpec | Mapping):
        return [jobs]
    return list(jobs)


def checked_specs(jobs: JobLike | Iterable[JobLike], *, default_model: str) -> list[JobSpec]:
    """Every job checked (JobsFileError names each bad one by its number,
    counted from 1; nothing is reserved)."""
    fields = []
    for job in job_list(jobs):
        if isinstance(job, JobSpec):
            fields.append(spec_fields(job))
        elif isinstance(job, Mapping):
            fields.append(dict(job))
        else:
            raise ConfigError(f"a job is a dict or a JobSpec, not {type(job).__name__}")
    return check_jobs(fields, source="submit", default_model=default_model)


def spec_fields(spec: JobSpec) -> dict[str, Any]:
    """A JobSpec as a jobs file's line, so it gets every check a line gets."""
    fields: dict[str, Any] = {"input": spec.input}
    if spec.agent:
        fields["agent"] = spec.agent
    elif spec.model:
        fields["model"] = spec.model
    optional = {
        "config": dict(spec.config) or None,
        "key": spec.key,
        "labels": dict(spec.labels) or None,
        "deadline": spec.deadline,
        "previous": spec.previous,
    }
    fields.update({name: value for name, value in optional.items() if value is not None})
    return fields
