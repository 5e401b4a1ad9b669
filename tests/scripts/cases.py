#!/usr/bin/env python3
"""The protocols' case tables (tests/protocols/<name>/cases.txt), for the harnesses.

A table has one section per harness, "[harness]", followed by its cases, one line
each: the flags of one run beyond --protocol <name> (the harness adds its own
sizes, seed and output). A harness with nothing to run for the protocol says why,
on a line "skip: <reason>". Blank lines and lines starting with '#' are comments.
docs/testing.md, "Case tables", lists the harnesses and what each asserts.

    cases.py HARNESS --catalog FILE
        prints HARNESS's cases of every protocol in FILE (a program's
        --list-protocols output), one line each: "<protocol> <flags...>", in
        catalog order; exit 1 with one line per problem when a catalog protocol
        has no table, or its table has no section for HARNESS
    cases.py check --catalog FILE [--tests PROGRAM]...
        every catalog protocol has a table, every table a catalog protocol, every
        table every harness (cases or a reason to skip), no unknown harness, the
        [cli] cases run every failure semantics the protocol takes, and, given
        the test programs (--tests, repeated), every [theory] suite is in one
"""
import argparse
import pathlib
import subprocess
import sys

TABLES = pathlib.Path(__file__).resolve().parent.parent / "protocols"

# What each harness is (docs/testing.md has the long form). "theory" lists
# GoogleTest suites (of unit_tests or mpi_tests) instead of flags.
HARNESSES = {
    "theory": "GoogleTest suites (unit_tests, mpi_tests) that test it against theory, sharing no code with its forms",
    "cli": "tests/scripts/test_cli.sh: 2 Open MPI or SMPI peers, --fail-rate 0.2, a valid complete trace",
    "cross_engine": "tests/scripts/test_cross_engine.sh: Open MPI, SMPI and the sequential engine, 8 peers, same bits",
    "sequential_1024": "tests/scripts/test_smpi_sequential_1024.sh: 1024 SMPI peers against the sequential engine",
    "sgd_sequential_1024": "tests/scripts/test_smpi_sgd_sequential_1024.sh: local SGD, 1024 SMPI peers against the "
                           "sequential engine",
    "forms": "tests/mpi/test_protocol_forms.cpp (ProtocolForms in mpi_np*, smpi_mpi_np*): the MPI form and the "
             "sequential engine hold the same vector on every peer after every round and write the same rows "
             "(averaging_bench flags; --grid cube|line, a leading decode-failures>=K)",
    "sgd_sequential_16": "tests/unit/test_sequential_sgd.cpp (SequentialSgd): local SGD on 16 sequential peers with "
                         "failures, every row's invariants (\"quadratic|logistic flags\")",
    "sgd_forms": "tests/mpi/test_sgd_forms.cpp (SgdForms in mpi_np*, smpi_mpi_np*): training's MPI form and the "
                 "sequential engine write the same models and rows (\"quadratic|logistic flags\")",
    "smpi_exact": "tests/scripts/test_smpi_async.sh: asynchronous protocols, SMPI and the sequential engine, same bits "
                  "(\"averaging|sgd PEERS flags\")",
    "smpi_statistics": "tests/scripts/test_smpi_async.sh: asynchronous protocols, SMPI and the sequential engine, "
                       "30 trials a side, to-target means within 3 standard errors (\"averaging|sgd PEERS flags\")",
}


class TableError(Exception):
    pass


def read_catalog(path):
    """{protocol: {"default": semantics, "semantics": [...]}} of a --list-protocols
    output, in catalog order."""
    rows = {}
    for line in pathlib.Path(path).read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            fields = line.split("\t")
            if len(fields) < 4:
                raise TableError(f"{path}: not a --list-protocols line: {line!r}")
            rows[fields[0]] = {"default": fields[2], "semantics": fields[3].split(",")}
    if not rows:
        raise TableError(f"{path}: no protocol in this --list-protocols output")
    return rows


def semantics_of(case, default):
    words = case.split()
    return words[words.index("--on-failure") + 1] if "--on-failure" in words[:-1] else default


def read_table(protocol):
    """{harness: ("cases", [lines]) or ("skip", reason)} of a protocol's table."""
    path = TABLES / protocol / "cases.txt"
    if not path.is_file():
        raise TableError(f"protocol {protocol!r} of the catalog has no case table: create {path.relative_to(TABLES.parent.parent)}")
    sections, current = {}, None
    for number, raw in enumerate(path.read_text().splitlines(), 1):
        line = raw.strip()
        where = f"{path.relative_to(TABLES.parent.parent)}:{number}"
        if not line or line.startswith("#"):
            continue
        if line.startswith("[") and line.endswith("]"):
            current = line[1:-1]
            if current not in HARNESSES:
                raise TableError(f"{where}: unknown harness [{current}] (known: {', '.join(HARNESSES)})")
            if current in sections:
                raise TableError(f"{where}: [{current}] given twice")
            sections[current] = ("cases", [])
        elif current is None:
            raise TableError(f"{where}: a case before the first [harness] line")
        elif line.startswith("skip:"):
            if sections[current][1]:
                raise TableError(f"{where}: [{current}] has cases and a skip")
            reason = line[len("skip:"):].strip()
            if not reason:
                raise TableError(f"{where}: a skip must say why")
            sections[current] = ("skip", reason)
        elif sections[current][0] == "skip":
            raise TableError(f"{where}: [{current}] has a skip and cases")
        else:
            if "--protocol" in line.split():
                raise TableError(f"{where}: a case gives the flags after --protocol {protocol}, not --protocol")
            sections[current][1].append(line)
    for harness, (kind, value) in sections.items():
        if kind == "cases" and not value:
            raise TableError(f"{path.relative_to(TABLES.parent.parent)}: [{harness}] has no case and no skip")
    return sections


def readable_tables(catalog, problems):
    """(protocol, table) of each catalog protocol whose table reads; problems gets the others."""
    for protocol in catalog:
        try:
            yield protocol, read_table(protocol)
        except TableError as e:
            problems.append(str(e))


def harness_cases(harness, catalog):
    lines, problems = [], []
    for protocol, table in readable_tables(catalog, problems):
        if harness not in table:
            problems.append(f"tests/protocols/{protocol}/cases.txt has no [{harness}] section (cases or 'skip: why')")
            continue
        kind, value = table[harness]
        if kind == "cases":
            lines += [f"{protocol} {case}" for case in value]
    return lines, problems


def gtest_suites(program):
    listing = subprocess.run([program, "--gtest_list_tests"], capture_output=True, text=True, timeout=60,
                             check=True).stdout
    # "Suite." lines, and "Instance/Suite." for parameterized suites.
    return {line.rstrip(".").split("/")[-1] for line in listing.splitlines() if line and not line.startswith(" ")}


def check(catalog, test_programs):
    problems = []
    suites = set().union(*(gtest_suites(p) for p in test_programs)) if test_programs else None
    for protocol, table in readable_tables(catalog, problems):
        for harness in HARNESSES:
            if harness not in table:
                problems.append(f"tests/protocols/{protocol}/cases.txt: no [{harness}] section (cases or 'skip: why')")
        # The command-line test runs each protocol under every failure semantics it takes.
        kind, value = table.get("cli", ("skip", ""))
        if kind == "cases":
            run = {semantics_of(case, catalog[protocol]["default"]) for case in value}
            for missing in sorted(set(catalog[protocol]["semantics"]) - run):
                problems.append(f"tests/protocols/{protocol}/cases.txt: no [cli] case runs --on-failure {missing}")
        kind, value = table.get("theory", ("skip", ""))
        if suites is not None and kind == "cases":
            for suite in value:
                if suite not in suites:
                    problems.append(f"tests/protocols/{protocol}/cases.txt: [theory] suite {suite} is in none of "
                                    f"{', '.join(test_programs)}")
    for folder in sorted(p.name for p in TABLES.iterdir() if p.is_dir()):
        if folder not in catalog:
            problems.append(f"tests/protocols/{folder}/ is not a protocol of the catalog ({', '.join(catalog)})")
    return problems


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("harness", choices=sorted(HARNESSES) + ["check"])
    parser.add_argument("--catalog", required=True, help="a program's --list-protocols output")
    parser.add_argument("--tests", action="append", default=[],
                        help="check: a GoogleTest program (unit_tests, mpi_tests), for the [theory] suites")
    args = parser.parse_args()
    try:
        catalog = read_catalog(args.catalog)
    except (OSError, TableError) as e:
        print(f"cases.py: {e}", file=sys.stderr)
        return 2
    if args.harness == "check":
        problems = check(catalog, args.tests)
        if not problems:
            print(f"{len(catalog)} protocols, each with a case table for the {len(HARNESSES)} harnesses")
    else:
        lines, problems = harness_cases(args.harness, catalog)
        if not problems:
            print("\n".join(lines))
    for problem in problems:
        print(f"cases.py: {problem}", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
