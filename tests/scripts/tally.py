"""The tally of a test script's checks: a line "ok: WHAT" or "FAIL: WHAT" per check
as it runs, then "NAME: N failure(s)" and the exit status (1 if any failed).

    T = Tally("export_tables")
    T.check(ok, "what was checked")
    return T.finish()
"""


class Tally:
    def __init__(self, name: str):
        self.name, self.failures = name, []

    def check(self, ok: bool, what: str) -> None:
        print(("ok: " if ok else "FAIL: ") + what)
        if not ok:
            self.failures.append(what)

    def finish(self) -> int:
        print(f"{self.name}: {len(self.failures)} failure(s)")
        return 1 if self.failures else 0
