"""The thirty slowest tests of the main pass, each with why it takes what it takes.

A snapshot of `--durations=30` (printed by ./scripts/test) on a fresh clone on a quiet
2-core machine; nothing schedules by it. None waits on a fixed sleep: the time is a process
started, killed or frozen, a window waited out on purpose, or many generated cases.
tests/repo/test_suite_table.py checks that each still exists and is marked slow.
"""

from __future__ import annotations

SLOWEST = {
    "tests/repo/test_packaging.py::test_a_new_user_runs_the_readme_commands_in_a_fresh_clone": (
        "a fresh clone's ./scripts/demo: creating the venv and installing is what it proves"
    ),
    "tests/process/test_chaos.py::test_fifty_kills_through_the_cli_and_workers_recover_exactly_once": (
        "fifty SIGKILLs at drawn moments, each followed by a recovery process"
    ),
    "tests/process/test_api_process_crash.py::test_an_api_killed_after_the_effect_leaves_one_effect_and_a_working_thread[inside the write, after its effect]": (
        "an API process killed inside a write; a worker takes the run over after its lease, a"
        " reviewer settles the unknown outcome, a second serve runs the thread's next run"
    ),
    "tests/process/test_chaos.py::test_kills_of_the_api_process_and_of_a_cron_worker_recover_exactly_once": (
        "sixteen SIGKILLs of an API process or of a cron's worker, each followed by a recovery"
    ),
    "tests/process/test_api_process_crash.py::test_an_api_killed_after_the_effect_leaves_one_effect_and_a_working_thread[after the write was recorded]": (
        "as above with the write recorded: three processes, two of them API servers"
    ),
    "tests/graphs/test_calculator_properties.py::test_random_expression_trees_match_python_arithmetic": (
        "3,000 random expression trees, each evaluated twice: the count finds the rare "
        "precedence and overflow cases"
    ),
    "tests/process/test_cron_workers.py::test_three_workers_run_each_due_cron_run_once_though_one_is_killed": (
        "a cron due every second watched over several slots on three workers, one killed"
    ),
    "tests/process/test_crash_resume.py::test_killed_inside_an_ungated_write_stops_at_the_gate_with_its_key[after_effect]": (
        "a CLI process killed after its effect, then a resume in a new process"
    ),
    "tests/process/test_run_owners.py::test_an_api_killed_during_after_seconds_leaves_the_run_to_a_worker_once[wait]": (
        "an API process killed during the run's after_seconds; the worker runs it after the delay"
    ),
    "tests/process/test_api_process_crash.py::test_a_run_in_a_killed_api_process_is_finished_by_a_worker_once": (
        "an API process killed mid-run; a worker takes the run over once its lease runs out"
    ),
    "tests/process/test_worker_fencing.py::test_a_worker_frozen_past_its_lock_is_fenced_out_after_a_takeover": (
        "a SIGSTOPped worker waited past its lock's TTL, another worker taking over, then the"
        " frozen one woken and seen to write nothing"
    ),
    "tests/process/test_crash_resume.py::test_a_retry_killed_after_its_effect_is_not_run_a_third_time_by_a_plain_resume": (
        "three CLI processes: a run and its retry each killed after the effect, then a resume"
    ),
    "tests/server/test_http_limits.py::test_redis_stopping_mid_run_gives_503_with_retry_after_on_every_route": (
        "Redis stopped under a served run, then each of 44 routes asked: each waits out its "
        "0.1 s retry budget before its 503"
    ),
    "tests/server/test_fuzz.py::test_fuzzing_under_custom_auth_with_stateful_links_finds_no_server_error": (
        "schemathesis walks every operation and its links as a custom-Auth user"
    ),
    "tests/process/test_worker_fencing.py::test_a_worker_frozen_while_it_remembers_stores_nothing_after_a_takeover": (
        "a worker frozen inside its remember call past its lock's TTL, another taking over, "
        "then the frozen one woken"
    ),
    "tests/server/test_fuzz.py::test_fuzzing_every_operation_finds_no_server_error_and_no_schema_violation": (
        "schemathesis over every operation of /openapi.json against a running service"
    ),
    "tests/process/test_worker_crash.py::test_a_worker_killed_mid_model_call_is_finished_by_another_with_its_write_once": (
        "a worker process killed while the model answers, another claiming after the window"
    ),
    "tests/process/test_worker_jobs.py::test_a_stopped_worker_hands_back_its_runs_within_the_grace_period_and_loses_none": (
        "the grace period is waited out with runs still going: the hand-back is the point"
    ),
    "tests/process/test_worker_crash.py::test_a_worker_killed_inside_a_write_is_claimed_and_left_to_a_reviewer": (
        "a worker process killed inside a write, another claiming it after the claim window"
    ),
    "tests/process/test_redis_blips.py::test_a_run_rides_through_a_redis_restart[10.0]": (
        "a 10 s Redis outage under a run: the outage's length is the scenario"
    ),
    "tests/process/test_failover.py::test_a_run_rides_through_a_cluster_master_failing_over[kill]": (
        "a cluster master killed under a run and its replica promoted"
    ),
    "tests/process/test_fencing.py::test_a_frozen_holder_is_fenced_out_after_a_takeover": (
        "a second process frozen past the lock's TTL while another takes the thread"
    ),
    "tests/process/test_worker_jobs.py::test_a_worker_killed_with_ten_runs_in_flight_has_each_finished_once_by_another": (
        "ten runs in flight in a worker process that is killed; another claims each once its "
        "claim window (1 s) has passed and finishes it"
    ),
    "tests/process/test_worker_runs.py::test_a_worker_killed_mid_tool_mid_stream_is_finished_once_and_the_stream_resumes": (
        "a worker process killed inside a tool, a second one claiming after the claim window"
    ),
    "tests/process/test_worker_runs.py::test_a_worker_killed_mid_checkpoint_is_finished_by_another_once": (
        "a worker SIGKILLed inside a checkpoint write; another claims the run past the claim window"
    ),
    "tests/graphs/test_agent_compaction.py::test_two_hundred_steps_keep_every_request_and_the_record_bounded": (
        "two hundred agent steps through the model client, compacting as it goes"
    ),
    "tests/process/test_redis_wait.py::test_a_worker_waits_for_redis_at_start_and_through_an_outage": (
        "a worker started before its Redis, then an outage: the waits are the scenario"
    ),
    "tests/process/test_worker_jobs.py::test_a_stopped_worker_finishes_the_runs_that_end_within_the_grace_period": (
        "a worker SIGTERMed with runs in flight, finishing them inside its grace period"
    ),
    "tests/process/test_worker_runs.py::test_a_frozen_worker_is_not_robbed_and_its_run_ends_once": (
        "a worker frozen (SIGSTOP) past a heartbeat, then thawed to finish its own run"
    ),
    "tests/process/test_redis_blips.py::test_an_outage_past_the_retry_budget_fails_clearly_and_resume_completes": (
        "Redis stopped past the retry budget, which is waited out, then a resume"
    ),
}
