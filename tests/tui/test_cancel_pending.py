"""`c` when the API's cancel fails (issue 25, defect 3): the console said
`cancelled: 1 row`. Now a red notification says the API did not confirm,
and the row shows "cancel pending" until the loop's next passes do."""

from __future__ import annotations

from reclaim_tui.core.models import Status
from reclaim_tui.errors import TransientReadError
from reclaim_tui.tui.screens.confirm import ConfirmScreen

from .conftest import Seeded
from .pilot_helpers import SIZE, press, select, settle, until


async def test_c_with_the_api_cancel_failing_says_so_in_red_and_shows_cancel_pending(
    seeded: Seeded,
) -> None:
    handle = (await seeded.get("submitted")).handle or ""
    seeded.fake.cancel_faults[handle] = [
        TransientReadError("cancel: connection refused", cause="network")
    ]
    app = seeded.app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await select(pilot, seeded.keys["submitted"])
        await press(pilot, "c")
        assert isinstance(app.screen, ConfirmScreen)
        await press(pilot, "y")

        def red() -> bool:
            return any(
                "cancel failed" in n.message and n.severity == "error" for n in app._notifications
            )

        assert await until(pilot, red), [n.message for n in app._notifications]
        assert not any(n.message == "cancelled: 1 row" for n in app._notifications)
        idem = seeded.keys["submitted"]
        assert await until(
            pilot,
            lambda: any(r.idem == idem and r.held for r in app.table.rows_shown),
        )
        cells = [str(c) for c in app.table.get_row(idem)]
        assert "cancel pending" in cells, cells
    row = await seeded.get("submitted")
    assert row.status == Status.CANCELLED and row.held
    assert seeded.fake.remotes[handle].status != "cancelled"
