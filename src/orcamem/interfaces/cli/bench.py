"""``orcamem bench``: latency and LoCoMo benchmarks, as tables or one JSON object."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from ..._kernel.config import Config, PackConfig, RecallConfig, SignalsConfig
from ...errors import OrcamemError
from .console import (
    EmbedderOption,
    command_group,
    fail,
    out,
    print_table,
    progress,
)

BenchDbOption = Annotated[
    str | None,
    typer.Option(
        "--db",
        help="Run on this database instead of a fresh SQLite file: an empty one, e.g. "
        "postgresql://user@host/db (the scale-out engine).",
    ),
]

bench_app = command_group("Benchmarks: latency, LoCoMo retrieval quality and the injected block.")


def _run(work, label: str, quiet: bool):
    """Run a benchmark with a progress bar on stderr; library errors print one line and exit."""
    try:
        with progress(label, quiet=quiet) as update:
            return work(lambda description, done, total: update(done, total, description))
    except OrcamemError as exc:
        raise fail(exc) from None


@bench_app.command("latency")
def latency_command(
    records: Annotated[
        list[int],
        typer.Option("--records", help="Sizes to measure, e.g. --records 2000 10000 100000."),
    ] = [2000, 10000],  # noqa: B006
    more: Annotated[list[int] | None, typer.Argument(hidden=True)] = None,
    queries: Annotated[int, typer.Option(help="Searches timed per size.")] = 200,
    adds: Annotated[int, typer.Option(help="Single adds timed per size.")] = 200,
    embedder: EmbedderOption = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON object.")] = False,
    db: BenchDbOption = None,
) -> None:
    """Time add, search and build_context at each size on a fresh database."""
    from rich.table import Table

    from ...bench.runs import latency

    sizes = [*records, *(more or [])]
    result = _run(
        lambda p: latency(sizes, queries=queries, adds=adds, embedder=embedder, progress=p, db=db),
        "latency",
        as_json,
    )
    if as_json:
        print(json.dumps(result))
        return
    table = Table(
        "records",
        "add p50",
        "search p50",
        "search p95",
        "context p50",
        "exact p50 / p95",
        "pruned p50 / p95, recall",
        "turns/s",
        "warm s",
        "DB MB",
        title="orcamem bench latency (ms; recall: the pruned search's share of exact hits)",
    )
    for size, row in result["records"].items():
        table.add_row(
            f"{int(size):,}",
            str(row["add_p50_ms"]),
            str(row["search_p50_ms"]),
            str(row["search_p95_ms"]),
            str(row["build_context_p50_ms"]),
            f"{row['search_exact_p50_ms']} / {row['search_exact_p95_ms']}",
            f"{row['search_pruned_p50_ms']} / {row['search_pruned_p95_ms']}, "
            f"{row['pruned_recall']}",
            f"{row['ingest_turns_per_s']:,.0f}",
            str(row["warm_s"]),
            str(row["db_mb"]),
        )
    print_table(table)
    out.print(f"machine: {result['machine']}")


@bench_app.command("locomo")
def locomo_command(
    data: Annotated[
        Path, typer.Option(help="A LoCoMo JSON file (e.g. ../shared/data/locomo/locomo-dev.json).")
    ],
    preset: Annotated[str, typer.Option(help="Recall preset.")] = "hybrid",
    fusion: Annotated[str, typer.Option(help="minmax or rrf.")] = "minmax",
    samples: Annotated[int | None, typer.Option(help="Only the first N samples.")] = None,
    conversations: Annotated[
        str | None, typer.Option(help="Only these conversations, from 0: e.g. 0-2 or 3,4.")
    ] = None,
    embedder: EmbedderOption = None,
    spreading: Annotated[
        bool, typer.Option(help="Spreading activation over the entity graph (the ablation).")
    ] = True,
    ablate: Annotated[
        list[str] | None,
        typer.Option(
            help="Also run with this switch flipped (on runs off, off runs on), e.g. "
            "--ablate enable_anchored_time (repeatable)."
        ),
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON object.")] = False,
    db: BenchDbOption = None,
) -> None:
    """Turn- and session-level recall@k on LoCoMo (category 5 excluded), zero model calls."""
    from rich.table import Table

    from ...bench.context import parse_conversations
    from ...bench.runs import ablated, locomo
    from ...recall.presets import engine_preset

    try:
        chosen = parse_conversations(conversations)
        config = Config(
            recall=RecallConfig(preset=preset, fusion=fusion),
            signals=SignalsConfig(enable_spreading_activation=spreading),
        )
        engine_preset(preset)
        configs = {name: ablated(config, name) for name in ablate or []}
    except OrcamemError as exc:
        raise fail(exc) from None

    def run(chosen_config: Config, label: str) -> dict:
        return _run(
            lambda p: locomo(
                data,
                config=chosen_config,
                embedder=embedder,
                progress=p,
                limit_samples=samples,
                conversations=chosen,
                db=db,
            ),
            label,
            as_json,
        )

    result = run(config, "locomo")
    if configs:
        result["ablations"] = {name: run(c, f"flipped {name}") for name, c in configs.items()}
    if as_json:
        print(json.dumps(result))
        return
    columns = ["any@1", "any@5", "any@10", "any@20", "all@10", "session any@5", "tokens", "n"]
    table = Table("category", *columns, title=f"orcamem bench locomo ({data.name})")
    rows = {**result["by_category"], "overall": result["overall"]}
    for name, row in rows.items():
        table.add_row(
            name,
            *(
                f"{row[k]:.3f}"
                for k in (
                    "recall_any@1",
                    "recall_any@5",
                    "recall_any@10",
                    "recall_any@20",
                    "recall_all@10",
                    "session_recall_any@5",
                )
            ),
            f"{row['context_tokens']:.0f}",
            str(row["questions"]),
        )
    print_table(table)
    if configs:
        _print_ablations(result)
    out.print(f"search p50 {result['search_p50_ms']} ms; machine: {result['machine']}")


_ABLATED = ("recall_any@5", "recall_any@10", "recall_all@10", "session_recall_any@5")


def _print_ablations(result: dict) -> None:
    """Each ablation's overall recall and its change against the run with the defaults."""
    from rich.table import Table

    table = Table("flipped", *_ABLATED, title="ablations (overall; change vs the defaults)")
    for name, ablation in result["ablations"].items():
        row = ablation["overall"]
        table.add_row(
            name,
            *(f"{row[k]:.3f} ({row[k] - result['overall'][k]:+.3f})" for k in _ABLATED),
        )
    print_table(table)


@bench_app.command("context")
def context_command(
    data: Annotated[
        Path | None,
        typer.Option(help="A LoCoMo JSON file (e.g. ../shared/data/locomo/locomo-dev.json)."),
    ] = None,
    unrelated: Annotated[
        Path | None,
        typer.Option(help="Unrelated queries, one a line (default: the shipped list)."),
    ] = None,
    conversations: Annotated[
        str | None, typer.Option(help="Only these conversations, from 0: e.g. 0-2 or 3,4.")
    ] = None,
    limit: Annotated[
        int | None, typer.Option(help="Only the first N questions of each conversation.")
    ] = None,
    proxy_loop: Annotated[
        int | None,
        typer.Option(
            "--proxy-loop", help="Also run N scripted exchanges through the proxy (e.g. 50)."
        ),
    ] = None,
    sleep: Annotated[
        bool,
        typer.Option(
            "--sleep", help="Consolidate each conversation by the rules first (as servers do)."
        ),
    ] = False,
    budget: Annotated[
        int | None,
        typer.Option(help="The block's token budget (default: Config's context_budget_tokens)."),
    ] = None,
    embedder: EmbedderOption = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON object.")] = False,
) -> None:
    """Judge the injected block itself: evidence recall, tokens, precision and false
    injection on LoCoMo (category 5 excluded), and the proxy loop; zero model calls."""
    from ...bench.context import context_bench, parse_conversations
    from ...bench.proxy_loop import proxy_loop as run_loop

    if data is None and proxy_loop is None:
        raise fail("give --data FILE (LoCoMo) and/or --proxy-loop N", 2)
    try:
        chosen = parse_conversations(conversations)
        config = (
            None
            if budget is None
            else Config(pack=PackConfig(context_budget_tokens=budget))  # checks the number
        )
    except OrcamemError as exc:
        raise fail(exc) from None
    result = {}
    if data is not None:
        result["locomo"] = _run(
            lambda p: context_bench(
                data,
                unrelated=unrelated,
                conversations=chosen,
                limit=limit,
                config=config,
                embedder=embedder,
                progress=p,
                sleep=sleep,
            ),
            "context",
            as_json,
        )
    if proxy_loop is not None:
        result["proxy_loop"] = _run(
            lambda p: run_loop(proxy_loop, progress=p), "proxy loop", as_json
        )
    if as_json:
        print(json.dumps(result))
        return
    if "locomo" in result:
        _print_context(result["locomo"], data)
    if "proxy_loop" in result:
        _print_loop(result["proxy_loop"])


def _print_context(result: dict, data: Path | None) -> None:
    from rich.table import Table

    table = Table(
        "category",
        "evidence recall",
        "all",
        "precision",
        "quoted p50",
        "tokens p50",
        "tokens p90",
        "chars/4 p50",
        "n",
        title=f"orcamem bench context ({getattr(data, 'name', '')}"
        f"{', after sleep' if result.get('sleep') else ''}, tokens: WordPiece)",
    )
    for name, row in {**result["by_category"], "overall": result["overall"]}.items():
        table.add_row(
            name,
            f"{row['evidence_recall']:.3f}",
            f"{row['evidence_recall_all']:.3f}",
            f"{row['precision']:.3f}",
            f"{row['quoted_p50']:.0f}",
            f"{row['tokens_p50']:.0f}",
            f"{row['tokens_p90']:.0f}",
            f"{row['estimate_p50']:.0f}",
            str(row["questions"]),
        )
    print_table(table)
    injected = Table(
        "space", "quotes stored", "hoists a rule", "tokens p50", "blocks",
        title=f"false injection ({result['unrelated_queries']} unrelated queries)",
    )  # fmt: skip
    for name, row in result["false_injection"].items():
        injected.add_row(
            name,
            f"{row['quotes_stored']:.3f}",
            f"{row['hoists_rule']:.3f}",
            f"{row['tokens_p50']:.0f}",
            str(row["blocks"]),
        )
    print_table(injected)
    out.print(f"{result['definition']}", markup=False)
    out.print(
        f"recall p50 {result['recall_p50_ms']} ms, p95 {result['recall_p95_ms']} ms; "
        f"machine: {result['machine']}"
    )


def _print_loop(result: dict) -> None:
    from rich.table import Table

    table = Table(
        "fact", "kept", "quoted turns", "assistant", "tokens",
        title=f"proxy loop ({result['exchanges']} exchanges, {result['conversations']} "
        f"conversations): facts kept {result['facts_kept']:.2f}, "
        f"assistant share {result['assistant_share']:.2f}",
    )  # fmt: skip
    for row in result["probes"]:
        table.add_row(
            row["fact"],
            "yes" if row["kept"] else "NO",
            str(row["quoted"]),
            str(row["assistant_quoted"]),
            str(row["tokens"]),
        )
    print_table(table, markup=False)
    out.print(f"machine: {result['machine']}")


@bench_app.command("consolidate")
def consolidate_command(
    upstream: Annotated[
        str | None, typer.Option(help="OpenAI-compatible base URL of a chat model to compare.")
    ] = None,
    model: Annotated[str | None, typer.Option(help="The model name at --upstream.")] = None,
    fixtures: Annotated[
        Path | None, typer.Option(help="A fixtures file (default: the shipped set).")
    ] = None,
    data: Annotated[
        str | None,
        typer.Option(help="A labelled set (JSON lines) or 'builtin': precision/recall per kind."),
    ] = None,
    part: Annotated[str, typer.Option(help="With --data: tune, held-out, fresh or all.")] = "all",
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON object.")] = False,
) -> None:
    """Precision/recall of consolidated memories on the fixture conversations, or per kind on
    a labelled set with --data (rules, and a model when --upstream/--model are given)."""
    from rich.table import Table

    from ..._kernel.llm import make_chat_model
    from ...bench.consolidation import score_labelled
    from ...bench.runs import consolidate

    def bench(chat=None):
        if data is None:
            return lambda p: consolidate(model=chat, fixtures=fixtures, progress=p)
        return lambda p: score_labelled(data=data, part=part, model=chat, progress=p)

    runs = {"rules": _run(bench(), "rules", as_json)}
    if upstream or model:
        try:
            chat = make_chat_model(upstream, model)
        except OrcamemError as exc:
            raise fail(exc) from None
        try:
            runs["model"] = _run(bench(chat), "model", as_json)
        finally:
            chat.close()
    if as_json:
        print(json.dumps(runs))
        return
    if data is not None:
        _labelled_tables(runs)
        return
    table = Table(
        "consolidator",
        "precision",
        "recall",
        "supersession",
        "p50 s/episode",
        title="orcamem bench consolidate",
    )
    for name, row in runs.items():
        table.add_row(
            f"{name} ({row['extractor']})",
            f"{row['precision']:.3f}",
            f"{row['recall']:.3f}",
            f"{row['supersession']:.3f}",
            f"{row['p50_s_per_episode']:.6f}",
        )
    print_table(table)
    _misses(runs)


def _misses(runs: dict) -> None:
    """What each consolidator missed or added unexpectedly, conversation by conversation."""
    for name, row in runs.items():
        for conversation in row["conversations"]:
            if conversation["missing"] or conversation["unexpected"]:
                out.print(
                    f"{name} · {conversation['name']}: missing {conversation['missing']}, "
                    f"unexpected {conversation['unexpected']}",
                    markup=False,
                )


def _labelled_tables(runs: dict) -> None:
    """Per kind precision/recall of each consolidator, then what each conversation missed."""
    from rich.table import Table

    def ratio(value):
        return "-" if value is None else f"{value:.3f}"

    for name, row in runs.items():
        table = Table(
            "kind",
            "precision",
            "recall",
            "labelled",
            "kept",
            "matched",
            title=f"orcamem bench consolidate {name} ({row['extractor']}) on {row['part']}: "
            f"{row['turns']} turns",
        )
        for kind, cell in [*row["kinds"].items(), ("overall", row["overall"])]:
            table.add_row(
                kind,
                ratio(cell["precision"]),
                ratio(cell["recall"]),
                str(cell["expected"]),
                str(cell["kept"]),
                str(cell["matched"]),
            )
        print_table(table)
    _misses(runs)


@bench_app.command("mcp")
def mcp_command(
    records: Annotated[int, typer.Option(help="Memories in the space.")] = 10000,
    calls: Annotated[int, typer.Option(help="orma_recall calls timed.")] = 200,
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON object.")] = False,
) -> None:
    """orma_recall latency over stdio with the MCP SDK's own client (p50/p95)."""
    from rich.table import Table

    from ...bench.mcp import mcp_recall_latency

    result = _run(
        lambda p: mcp_recall_latency(records=records, calls=calls, progress=p), "mcp", as_json
    )
    if as_json:
        print(json.dumps(result))
        return
    table = Table(
        "records",
        "recall p50",
        "recall p95",
        "in-process p50",
        "MCP overhead p50",
        title="orcamem bench mcp (ms)",
    )
    table.add_row(
        f"{records:,}",
        str(result["recall_p50_ms"]),
        str(result["recall_p95_ms"]),
        str(result["direct_recall_p50_ms"]),
        str(result["overhead_p50_ms"]),
    )
    print_table(table)
    out.print(f"machine: {result['machine']}")


@bench_app.command("load")
def load_command(
    clients: Annotated[
        list[int],
        typer.Option("--clients", help="Concurrent clients, one run each: --clients 1 8 32."),
    ] = [32],  # noqa: B006
    more: Annotated[list[int] | None, typer.Argument(hidden=True)] = None,
    seconds: Annotated[
        float, typer.Option(help="How long each run lasts (it stops by itself).")
    ] = 10.0,
    spaces: Annotated[int, typer.Option(help="Spaces the clients spread over.")] = 4,
    preload: Annotated[int, typer.Option(help="Lines in each space before the run.")] = 1000,
    db: BenchDbOption = None,
    replicas: Annotated[
        int, typer.Option(help="`orcamem up` processes on the one database (try with --db).")
    ] = 1,
    workers: Annotated[
        int, typer.Option(help="Each server's --workers (processes on its one port).")
    ] = 1,
    requests: Annotated[
        int | None,
        typer.Option(help="Requests each client makes; the run ends then (--seconds ignored)."),
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON object.")] = False,
) -> None:
    """Mixed add/search/proxy load on loopback against a stub upstream, one run per client
    count in one invocation (compare them: same machine, same minute); checks that every
    acknowledged write is listed by every server afterwards. With --db and --replicas N, N
    servers share one database and the clients spread over them round-robin."""
    from rich.table import Table

    from ...bench.load import load_test

    counts = [*clients, *(more or [])]
    if not all(1 <= n <= 256 for n in counts) or not 0 < seconds <= 600:
        raise fail("use 1-256 clients and 0-600 seconds", 2)
    if not 1 <= spaces <= 64 or not 1 <= preload <= 10_000_000:
        raise fail("use 1-64 spaces and 1-10,000,000 preloaded lines", 2)
    if not 1 <= replicas <= 8 or not 1 <= workers <= 16:
        raise fail("use 1-8 replicas and 1-16 workers", 2)
    if requests is not None and not 1 <= requests <= 100_000:
        raise fail("use 1-100,000 requests a client", 2)

    def runs(p):
        return {
            str(n): load_test(
                clients=n,
                seconds=seconds,
                spaces=spaces,
                preload=preload,
                db=db,
                replicas=replicas,
                workers=workers,
                requests=requests,
                progress=p,
            )
            for n in counts
        }

    result = _run(runs, "load", as_json)
    if as_json:
        print(json.dumps({"clients": result}))
        return
    table = Table(
        "clients",
        "req/s",
        "search/s",
        *(f"{op} p50/p99" for op in ("search", "add", "proxy")),
        "errors",
        "lost",
        "per replica",
        "load",
        title=f"orcamem bench load ({f'{requests} requests a client' if requests else f'{seconds:g} s'}"
        f" a run; ms; {replicas} replica(s), {workers} worker(s) each)",
    )
    for count, run in result.items():
        ops = run["ops"]
        table.add_row(
            count,
            str(run["throughput_rps"]),
            f"{ops['search']['count'] / run['seconds']:.1f}",
            *(f"{ops[op]['p50_ms']}/{ops[op]['p99_ms']}" for op in ("search", "add", "proxy")),
            str(run["errors"]),
            str(run["missing_acknowledged"]),
            " + ".join(str(r["requests"]) for r in run["per_replica"]),
            "->".join(f"{x:.1f}" for x in run["load_1m"]),
        )
    print_table(table)
    for count, run in result.items():
        out.print(f"{count} clients: machine {run['machine']}")


@bench_app.command("proxy")
def proxy_command(
    records: Annotated[int, typer.Option(help="Memories in the space.")] = 10000,
    requests: Annotated[int, typer.Option(help="Chat requests timed.")] = 200,
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON object.")] = False,
) -> None:
    """Latency the memory proxy adds before the upstream's first byte (p50/p95), against a
    local stub upstream on 127.0.0.1."""
    from rich.table import Table

    from ...bench.proxy import proxy_latency

    result = _run(
        lambda p: proxy_latency(records=records, requests=requests, progress=p), "proxy", as_json
    )
    if as_json:
        print(json.dumps(result))
        return
    table = Table(
        "records", "added p50", "added p95", "build_context p50", title="orcamem bench proxy (ms)"
    )
    table.add_row(
        f"{records:,}",
        str(result["added_p50_ms"]),
        str(result["added_p95_ms"]),
        str(result["build_context_p50_ms"]),
    )
    print_table(table)
    out.print(f"machine: {result['machine']}")
