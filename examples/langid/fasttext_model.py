"""fastText's supervised model files (.bin, and .ftz: product-quantized), read
without fastText, and its tokenization in Python (the reference the C++
program in main.cpp follows).

    model = read_fasttext("lid.176.ftz")
    model.args.loss, model.args.dim          # "hs", 16
    model.input                              # float32 [rows, dim]: the rows PQ decodes to
    tok = Tokenizer.from_model(model)
    ids = tok.ids("Bonjour tout le monde")   # rows of `model.input` fastText averages

What the file holds (fastText 0.9, file version 12; every number
little-endian, as fastText writes them on the machines it runs on):

    int32 magic 793712314, int32 version 12
    args: int32 dim, ws, epoch, minCount, neg, wordNgrams, loss (1 hs,
          2 ns, 3 softmax, 4 ova), model (3 supervised), bucket, minn,
          maxn, lrUpdateRate; float64 t
    dictionary: int32 size, nwords, nlabels; int64 ntokens, pruneidx_size;
          per entry: the word's bytes, a NUL, int64 count, int8 type (0 word,
          1 label) (words first, then labels, each sorted by count);
          pruneidx_size x (int32 bucket, int32 row): the n-gram buckets a
          quantized model kept and their row after the words
          (pruneidx_size -1: nothing pruned, every bucket has a row)
    uint8 quant_input, input matrix; uint8 qout, output matrix
    dense matrix:     int64 m, n; float32 [m, n]
    quantized matrix: uint8 qnorm; int64 m, n; int32 codesize;
          uint8 codes[codesize] (nsubq per row); a product quantizer;
          if qnorm: uint8 norm_codes[m] and a product quantizer of dim 1
    product quantizer: int32 dim, nsubq, dsub, lastdsub;
          float32 centroids[dim * 256]: per sub-quantizer k (the last one
          lastdsub wide), 256 centroids of dsub floats

A quantized row is the concatenation, over its nsubq sub-quantizers, of
the centroid its code names, times its norm (the dim-1 quantizer's centroid
for its norm code) when qnorm.
"""
from __future__ import annotations

import re
import struct
from dataclasses import dataclass, field

import numpy as np

MAGIC = 793712314
VERSION = 12
EOS = b"</s>"
LOSSES = {1: "hs", 2: "ns", 3: "softmax", 4: "ova"}
SUPERVISED = 3
KSUB = 256  # centroids per sub-quantizer (8-bit codes)


@dataclass
class Args:
    dim: int
    ws: int
    epoch: int
    min_count: int
    neg: int
    word_ngrams: int
    loss: str
    model: int
    bucket: int
    minn: int
    maxn: int
    lr_update_rate: int
    t: float


@dataclass
class FastTextModel:
    args: Args
    words: list[bytes]            # row i of `input` for i < nwords
    word_counts: list[int]
    labels: list[bytes]           # "__label__en", ...: output i
    label_counts: list[int]       # sorted decreasing (the Huffman tree's input)
    # bucket -> row - nwords for the n-gram buckets kept, or None (every
    # bucket kept: row nwords + bucket)
    pruneidx: dict[int, int] | None
    input: np.ndarray             # float32 [rows, dim], decoded
    output: np.ndarray            # float32 [nlabels, dim], decoded
    input_pq: "QuantizedRows | None" = field(default=None, repr=False)  # the input's codes (.ftz)
    quant_output: bool = False
    file_bytes: int = 0
    ntokens: int = field(default=0, repr=False)

    @property
    def nwords(self) -> int:
        return len(self.words)


class _Reader:
    def __init__(self, data: bytes) -> None:
        self.data, self.pos = data, 0

    def take(self, n: int) -> bytes:
        if n < 0 or self.pos + n > len(self.data):
            raise ValueError(f"truncated fastText file: {n} bytes wanted at offset {self.pos} of {len(self.data)}")
        out = self.data[self.pos:self.pos + n]
        self.pos += n
        return out

    def unpack(self, fmt: str) -> tuple:
        return struct.unpack("<" + fmt, self.take(struct.calcsize("<" + fmt)))

    def i32(self) -> int:
        return self.unpack("i")[0]

    def i64(self) -> int:
        return self.unpack("q")[0]

    def cstr(self) -> bytes:
        end = self.data.find(b"\0", self.pos)
        if end < 0:
            raise ValueError("truncated fastText file: a word without its NUL")
        out = self.data[self.pos:end]
        self.pos = end + 1
        return out

    def floats(self, n: int) -> np.ndarray:
        return np.frombuffer(self.take(4 * n), dtype="<f4").astype(np.float32)


def read_fasttext(path: str) -> FastTextModel:
    """Reads a supervised fastText model (.bin or .ftz)."""
    with open(path, "rb") as f:
        data = f.read()
    r = _Reader(data)
    magic, version = r.unpack("ii")
    if magic != MAGIC:
        raise ValueError(f"{path}: not a fastText model (magic {magic}, want {MAGIC})")
    if version != VERSION:
        raise ValueError(f"{path}: fastText file version {version}; this reader knows version {VERSION}")
    a = r.unpack("12i")
    t = r.unpack("d")[0]
    if a[6] not in LOSSES:
        raise ValueError(f"{path}: unknown loss {a[6]}")
    args = Args(*a[:6], LOSSES[a[6]], *a[7:], t)
    if args.model != SUPERVISED:
        raise ValueError(f"{path}: model type {args.model}, not a supervised classifier (3)")
    size, nwords, nlabels = r.unpack("iii")
    ntokens, pruneidx_size = r.unpack("qq")
    words, word_counts, labels, label_counts = [], [], [], []
    for _ in range(size):
        word = r.cstr()
        count, kind = r.unpack("qb")
        (words if kind == 0 else labels).append(word)
        (word_counts if kind == 0 else label_counts).append(count)
    if len(words) != nwords or len(labels) != nlabels:
        raise ValueError(f"{path}: {len(words)} words and {len(labels)} labels, the header says {nwords} and {nlabels}")
    pruneidx = None
    if pruneidx_size >= 0:
        pairs = np.frombuffer(r.take(8 * pruneidx_size), dtype="<i4").reshape(-1, 2)
        pruneidx = {int(b): int(row) for b, row in pairs}
    quant_input = bool(r.take(1)[0])
    inp, input_pq = _matrix(r, quant_input)
    quant_output = bool(r.take(1)[0])
    out, _ = _matrix(r, quant_output)
    if r.pos != len(data):
        raise ValueError(f"{path}: {len(data) - r.pos} bytes after the output matrix")
    rows = nwords + (len(pruneidx) if pruneidx is not None else args.bucket)
    if inp.shape != (rows, args.dim) or out.shape != (nlabels, args.dim):
        raise ValueError(f"{path}: matrices {inp.shape} and {out.shape}, want ({rows}, {args.dim}) and "
                         f"({nlabels}, {args.dim})")
    return FastTextModel(args, words, word_counts, labels, label_counts, pruneidx, inp, out, input_pq,
                         quant_output, len(data), ntokens)


@dataclass
class QuantizedRows:
    """A product-quantized matrix as the file keeps it."""

    codes: np.ndarray                   # uint8 [m, nsubq]: row i's centroid per sub-quantizer
    centroids: np.ndarray               # float32 [nsubq, 256, dsub]; the last one's padded with zeros to dsub
    dim: int                            # n: the last sub-quantizer is dim - (nsubq - 1) * dsub wide
    norm_codes: np.ndarray | None       # uint8 [m] (qnorm), else None
    norm_centroids: np.ndarray | None   # float32 [256]: the norms

    def decode(self) -> np.ndarray:
        """float32 [m, dim]: the centroids side by side, times the norm
        (fastText's QuantMatrix::addRowToVector)."""
        nsubq = self.codes.shape[1]
        rows = self.centroids[np.arange(nsubq), self.codes].reshape(len(self.codes), -1)[:, :self.dim]
        if self.norm_codes is not None:
            rows = rows * self.norm_centroids[self.norm_codes][:, None]
        return np.ascontiguousarray(rows, dtype=np.float32)

    def take(self, order: np.ndarray) -> "QuantizedRows":
        """The rows `order` names, in that order."""
        norms = self.norm_codes[order] if self.norm_codes is not None else None
        return QuantizedRows(self.codes[order], self.centroids, self.dim, norms, self.norm_centroids)


def _matrix(r: _Reader, quantized: bool) -> tuple[np.ndarray, QuantizedRows | None]:
    """A matrix as float32 [m, n] (decoded if product-quantized), and its
    codes if it was."""
    if not quantized:
        m, n = r.unpack("qq")
        return r.floats(m * n).reshape(m, n), None
    qnorm = bool(r.take(1)[0])
    m, n = r.unpack("qq")
    codesize = r.i32()
    codes = np.frombuffer(r.take(codesize), dtype=np.uint8)
    dim, nsubq, dsub, lastdsub, flat = _product_quantizer(r)
    if dim != n or codesize != m * nsubq:
        raise ValueError(f"quantized matrix [{m}, {n}]: quantizer of dim {dim}, {codesize} codes for {nsubq} per row")
    centroids = np.zeros((nsubq, KSUB, dsub), dtype=np.float32)
    for k in range(nsubq):  # sub-quantizer k's 256 centroids start at k * 256 * dsub
        width = lastdsub if k == nsubq - 1 else dsub
        centroids[k, :, :width] = flat[k * KSUB * dsub:k * KSUB * dsub + KSUB * width].reshape(KSUB, width)
    norm_codes = norm_centroids = None
    if qnorm:
        norm_codes = np.frombuffer(r.take(m), dtype=np.uint8)
        ndim, _, _, _, norm_centroids = _product_quantizer(r)
        if ndim != 1:
            raise ValueError(f"the norms' quantizer has dim {ndim}, want 1")
    q = QuantizedRows(codes.reshape(m, nsubq), centroids, n, norm_codes, norm_centroids)
    return q.decode(), q


def _product_quantizer(r: _Reader) -> tuple[int, int, int, int, np.ndarray]:
    dim, nsubq, dsub, lastdsub = r.unpack("iiii")
    if dim <= 0 or nsubq <= 0 or dsub <= 0 or not 0 < lastdsub <= dsub or (nsubq - 1) * dsub + lastdsub != dim:
        raise ValueError(f"product quantizer: dim {dim}, nsubq {nsubq}, dsub {dsub}, lastdsub {lastdsub}")
    return dim, nsubq, dsub, lastdsub, r.floats(dim * KSUB)


# ---------------------------------------------------------------------------
# The hierarchical softmax's tree.


def huffman_paths(counts: list[int]) -> list[list[tuple[int, bool]]]:
    """Per label, its path from the root as (output row, goes right) pairs,
    for the Huffman tree fastText builds from the label counts (sorted
    decreasing). Internal node osz + k uses output row k; at each node the
    right child has probability sigmoid(row . hidden), the left one 1 minus it.

    fastText's construction: leaves 0..osz-1, internal nodes osz..2 osz - 2
    made in order, each from the two smallest counts among the leaves not yet
    used (taken from the smallest, osz - 1, down) and the internal nodes made
    so far (taken in order), a leaf winning only on a strictly smaller count;
    the second taken is the right child."""
    osz = len(counts)
    n = 2 * osz - 1
    count = [float(c) for c in counts] + [1e15] * (osz - 1)
    parent, right = [-1] * n, [False] * n
    leaf, node = osz - 1, osz
    for i in range(osz, n):
        pair = []
        for _ in range(2):
            if leaf >= 0 and count[leaf] < count[node]:
                pair.append(leaf)
                leaf -= 1
            else:
                pair.append(node)
                node += 1
        count[i] = count[pair[0]] + count[pair[1]]
        parent[pair[0]] = parent[pair[1]] = i
        right[pair[1]] = True
    paths = []
    for i in range(osz):
        path, j = [], i
        while parent[j] != -1:
            path.append((parent[j] - osz, right[j]))
            j = parent[j]
        paths.append(path[::-1])
    return paths


# ---------------------------------------------------------------------------
# Tokenization: fastText's Dictionary::getLine for one line of text.

# readWord's separators: space, newline, carriage return, tab, vertical tab,
# form feed, NUL. A line ends with the end-of-sentence token.
_SPLIT = re.compile(rb"[ \n\r\t\v\f\x00]+")
_MASK64 = (1 << 64) - 1


def fnv1a(data: bytes) -> int:
    """fastText's Dictionary::hash: 32-bit FNV-1a over the bytes as *signed*
    chars: a byte >= 0x80 is xored in sign-extended (0xFFFFFF80 | b)."""
    h = 2166136261
    for b in data:
        h ^= b | 0xFFFFFF00 if b >= 0x80 else b
        h = (h * 16777619) & 0xFFFFFFFF
    return h


def _widen(h: int) -> int:
    """An int32 word hash as addWordNgrams reads it: uint64 of int32 (sign-extended)."""
    return h | 0xFFFFFFFF00000000 if h >= 1 << 31 else h


@dataclass
class Tokenizer:
    """Maps a line of text to the input rows fastText averages for it."""

    words: dict[bytes, int]
    nwords: int
    minn: int
    maxn: int
    word_ngrams: int
    bucket: int
    ngram_rows: dict[int, int] | None  # bucket -> row - nwords; None: every bucket
    label_prefix: bytes = b"__label__"

    @classmethod
    def from_model(cls, model: FastTextModel, ngram_rows: dict[int, int] | None | str = "file") -> "Tokenizer":
        """The model's tokenizer; `ngram_rows` other than "file" renumbers
        the kept n-gram buckets (the converter sorts them)."""
        a = model.args
        rows = model.pruneidx if ngram_rows == "file" else ngram_rows
        return cls({w: i for i, w in enumerate(model.words)}, model.nwords, a.minn, a.maxn, a.word_ngrams,
                   a.bucket, rows)

    def _push(self, out: list[int], bucket: int) -> None:
        # Dictionary::pushHash
        if self.ngram_rows is None:
            out.append(self.nwords + bucket)
        elif bucket in self.ngram_rows:
            out.append(self.nwords + self.ngram_rows[bucket])

    def subwords(self, word: bytes, out: list[int]) -> None:
        """Character n-grams of "<word>" from minn to maxn UTF-8 code points
        (bytes that continue a code point never start one), hashed into
        buckets (Dictionary::computeSubwords)."""
        w = b"<" + word + b">"
        size = len(w)
        for i in range(size):
            if w[i] & 0xC0 == 0x80:
                continue
            j, n = i, 1
            while j < size and n <= self.maxn:
                j += 1
                while j < size and w[j] & 0xC0 == 0x80:
                    j += 1
                if n >= self.minn and not (n == 1 and (i == 0 or j == size)):
                    self._push(out, fnv1a(w[i:j]) % self.bucket)
                n += 1

    def ids(self, line: str | bytes) -> list[int]:
        """The rows for one line, in fastText's order (Dictionary::getLine)."""
        data = line.encode("utf-8") if isinstance(line, str) else line
        out: list[int] = []
        hashes: list[int] = []
        for token in [t for t in _SPLIT.split(data) if t] + [EOS]:
            wid = self.words.get(token, -1)
            if wid < 0 and token.startswith(self.label_prefix):
                continue  # a label: not part of the text
            if wid >= 0:
                out.append(wid)
            if token != EOS and self.maxn > 0:
                self.subwords(token, out)
            hashes.append(fnv1a(token))
            if token == EOS:
                break  # getLine stops at the first "</s>", even one typed in the line
        for i in range(len(hashes)):
            h = _widen(hashes[i])
            for j in range(i + 1, min(len(hashes), i + self.word_ngrams)):
                h = (h * 116049371 + _widen(hashes[j])) & _MASK64
                self._push(out, h % self.bucket)
        return out
