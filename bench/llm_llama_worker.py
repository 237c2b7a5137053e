"""One llama.cpp measurement for bench/llm.py, run in .venv-llama (llama-cpp-python):

    .venv-llama/bin/python bench/llm_llama_worker.py MODEL.gguf --threads 1 --prompt-ids 1,2,3 --decode 128

Prints one JSON line: load_ms (the model and a context), prefill_ms (the prompt
in one batch), decode_ms (each generated token: greedy, one eval a token),
first_token_ms (from the start of the load to the first generated token),
rss_before_mb and peak_rss_mb (this process, before the load and at its
peak: VmHWM), the generated ids, and the per-token logits of the prompt's
last position (for the perplexity check, with --logits).

Greedy decoding reads the logits itself (argmax) and feeds each token back
with eval(), as tern-llm does; llama.cpp's own sampler chain is not timed.
"""
from __future__ import annotations

import argparse
import json
import resource
import time


def _rss_mb() -> float:
    """This process's peak RSS: VmHWM (getrusage's ru_maxrss keeps the parent's across fork and exec)."""
    try:
        for line in open("/proc/self/status"):
            if line.startswith("VmHWM:"):
                return float(line.split()[1]) / 1024.0
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("model")
    ap.add_argument("--threads", type=int, required=True)
    ap.add_argument("--prompt-ids", default="", help="comma-separated token ids (BOS included if wanted)")
    ap.add_argument("--decode", type=int, default=128)
    ap.add_argument("--ctx", type=int, default=512)
    ap.add_argument("--tokenize", action="store_true",
                    help="instead of timing: the ids of each string of the JSON list on stdin (no BOS, special "
                         "tokens parsed)")
    ap.add_argument("--perplexity", action="store_true",
                    help="instead of timing: the negative log-likelihood of each prompt token after the first")
    args = ap.parse_args()
    import numpy as np
    from llama_cpp import Llama

    if args.tokenize:
        import sys

        llm = Llama(model_path=args.model, n_ctx=64, vocab_only=True, verbose=False)
        texts = json.loads(sys.stdin.read())
        print(json.dumps([llm.tokenize(t.encode("utf-8"), add_bos=False, special=True) for t in texts]))
        return
    ids = [int(x) for x in args.prompt_ids.split(",")]
    rss_before = _rss_mb()
    t0 = time.perf_counter()
    llm = Llama(model_path=args.model, n_ctx=args.ctx, n_batch=max(len(ids), 32), n_ubatch=max(len(ids), 32),
                n_threads=args.threads, n_threads_batch=args.threads, logits_all=args.perplexity, verbose=False,
                use_mmap=True)
    t1 = time.perf_counter()
    if args.perplexity:
        llm.eval(ids)
        scores = np.asarray(llm.scores[: len(ids)], dtype=np.float64)
        logz = np.log(np.exp(scores - scores.max(1, keepdims=True)).sum(1)) + scores.max(1)
        nll = [float(logz[i] - scores[i, ids[i + 1]]) for i in range(len(ids) - 1)]
        print(json.dumps({"nll": nll}))
        return
    llm.eval(ids)
    t2 = time.perf_counter()
    out, decode = [], []
    first = None
    n_vocab = llm.n_vocab()

    def last_logits():  # the last evaluated token's logits, read from the context (a view: copied)
        return np.ctypeslib.as_array(llm._ctx.get_logits_ith(-1), shape=(n_vocab,)).copy()

    logits = last_logits()
    for i in range(args.decode):
        tok = int(np.argmax(logits))
        out.append(tok)
        if first is None:
            first = time.perf_counter()
        if i == args.decode - 1:
            break
        s = time.perf_counter()
        llm.eval([tok])
        decode.append(time.perf_counter() - s)
        logits = last_logits()
    print(json.dumps({
        "load_ms": (t1 - t0) * 1e3, "prefill_ms": (t2 - t1) * 1e3, "decode_ms": [d * 1e3 for d in decode],
        "first_token_ms": (first - t0) * 1e3, "rss_before_mb": rss_before, "peak_rss_mb": _rss_mb(), "tokens": out,
        "prompt_tokens": len(ids),
    }))


if __name__ == "__main__":
    main()
