"""tern.llm: language models from GGUF files.

    import tern.llm
    model = tern.llm.from_gguf("SmolLM2-135M-Instruct.Q4_1.gguf")   # a torch.nn.Module
    tok = tern.llm.tokenizer_of("SmolLM2-135M-Instruct.Q4_1.gguf")
    logits = model(torch.tensor([tok.encode("The capital of France is")]))
    tern.llm.export(model, max_context=1024).save("smollm2.tern")   # tern.llm.generation
    g = tern.llm.load("smollm2.tern", threads=2)
    print(g.generate("What is the capital of France?", chat=True, temperature=0.0).text)

from_gguf reads the Llama family (tern.llm.llama says what that covers) and
keeps the weights in the file's block formats (tern.llm.blocks): the module
reads the same bits llama.cpp reads. llm_metadata(tok, max_context) is the
tokenizer and settings a .tern file carries for the C++ runner
(tern.llm.file_meta, extension/llm/). Importing tern.llm does not import
torch; from_gguf and LlamaGGUF (tern.llm.llama) do, on first use.
"""
from __future__ import annotations

from tern.llm.file_meta import llm_metadata
from tern.llm.generation import Generation, Generator, export, load
from tern.llm.gguf_file import GGUFError, read_gguf, read_tokenizer
from tern.llm.tokenizer import Tokenizer, TokenizerError

_TORCH_NAMES = ("LlamaGGUF", "from_gguf")  # tern.llm.llama: imported when first asked for (it imports torch)


def __getattr__(name: str):
    if name in _TORCH_NAMES:
        from tern.llm import llama

        return getattr(llama, name)
    raise AttributeError(f"module 'tern.llm' has no attribute {name!r}")


def tokenizer_of(path) -> Tokenizer:
    """The byte-level BPE tokenizer stored in GGUF file `path`."""
    return Tokenizer(read_tokenizer(path))


__all__ = ["GGUFError", "Generation", "Generator", "LlamaGGUF", "Tokenizer", "TokenizerError", "export", "from_gguf",
           "llm_metadata", "load", "read_gguf", "read_tokenizer", "tokenizer_of"]
