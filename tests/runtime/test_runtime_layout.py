"""The general runtime's parts: per-kind logic and state, and snapshots of named fields."""

import pickle

import pytest
from runtime_helpers import plain_data

from sqlwin.ir import CountWindow, EmitSpec, GlobalWindow, Hop, Session, Slide, Tumble, WatermarkSpec
from sqlwin.runtime import AggregateSpec, RuntimeConfigError, WindowRuntime, windows

S = 1_000_000
AGGS = [AggregateSpec("count"), AggregateSpec("collect_list", 0)]
KINDS = {
    "fixed": (Hop(10 * S, 5 * S), windows.FixedLogic, windows.KeyState),
    "session": (Session(5 * S), windows.SessionLogic, windows.SessionKeyState),
    "slide": (Slide(6 * S), windows.SlideLogic, windows.SlideKeyState),
    "count": (CountWindow(3, 2), windows.CountLogic, windows.CountKeyState),
    "global": (GlobalWindow(), windows.GlobalLogic, windows.GlobalKeyState),
}


def fed(windower) -> WindowRuntime:
    rt = WindowRuntime(windower, WatermarkSpec(delay=30 * S), EmitSpec(allowed_lateness=60 * S), AGGS)
    for i in range(12):
        rt.process_batch([(("a",), (i * 7 % 20) * S, (i,)), (("b",), i * 4 * S, (i,))], i)
    return rt


@pytest.mark.parametrize("kind", list(KINDS))
def test_each_kind_has_its_logic_and_key_state(kind):
    windower, logic, key_state = KINDS[kind]
    rt = fed(windower)
    assert type(rt._logic) is logic and logic.key_state is key_state
    assert all(type(ks) is key_state for ks in rt._keys.values())
    for ks in rt._keys.values():
        again = key_state.restore(ks.snapshot())
        assert again.snapshot() == ks.snapshot() and list(again.windows) == list(ks.windows)


@pytest.mark.parametrize("kind", list(KINDS))
def test_a_snapshot_is_plain_data_with_named_fields(kind):
    rt = fed(KINDS[kind][0])
    data = plain_data(rt.snapshot())
    assert (data["envelope"], data["kind"], data["format"]) == (1, "WindowRuntime", 2)
    key, state = data["state"]["keys"][0]
    assert key == ("a",) and {"windows", "last_activity", "last_event"} <= set(state)
    assert all("acc" in window and "fired" in window for window in state["windows"])


def test_a_field_missing_from_a_snapshot_takes_its_default():
    rt = fed(Tumble(10 * S))
    data = pickle.loads(rt.snapshot())
    dropped = 0
    for _, state in data["state"]["keys"]:  # as if written before these fields existed
        for window in state["windows"]:
            for name, default in (("late_count", 0), ("fired_values", None)):
                if window[name] == default:
                    del window[name]
                    dropped += 1
            window["added_by_a_later_version"] = 1  # and a field this version does not know
    assert dropped
    restored = WindowRuntime.restore(pickle.dumps(data))
    assert restored.open_windows(("a",)) == rt.open_windows(("a",))
    assert restored.end_of_input() == rt.end_of_input()


def test_a_snapshot_of_an_unknown_format_is_refused():
    data = pickle.loads(fed(Tumble(10 * S)).snapshot())
    data["format"] = 99
    with pytest.raises(RuntimeConfigError, match="format 99"):
        WindowRuntime.restore(pickle.dumps(data))
