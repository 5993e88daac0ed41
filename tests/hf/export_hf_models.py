"""Builds small random-initialised Hugging Face models offline and exports them
as TorchScript for libaccel, with the data the training programs read.

    export_hf_models.py gpt2|bert|llama|llama_gqa|mistral|qwen2|gemma OUT_DIR

OUT_DIR gets model.pt (traced through forward(input_ids, attention_mask,
labels) -> {"loss", "logits"}; the extra file accel/state_dict_keys.json lists
the model's state_dict() names so save_model leaves out the buffers
transformers does not save), config.json, and the batches as raw little-endian
int64 arrays input_ids.bin, attention_mask.bin, labels.bin (N rows; shapes in
data.json).
"""
import json
import os
import sys

import torch
from transformers import (BertConfig, BertForSequenceClassification, CohereConfig, CohereForCausalLM, GemmaConfig,
                          GemmaForCausalLM, GPT2Config, GPT2LMHeadModel, GraniteConfig, GraniteForCausalLM,
                          LlamaConfig, LlamaForCausalLM, MistralConfig, MistralForCausalLM, OlmoConfig,
                          OlmoForCausalLM, Qwen2Config, Qwen2ForCausalLM, StableLmConfig, StableLmForCausalLM)

ROWS, LENGTH, VOCAB = 8, 16, 256


def thin(base):
    """base with the positional forward a trace needs, returning a dict."""

    class Exported(base):
        def forward(self, input_ids, attention_mask, labels):
            out = super().forward(input_ids=input_ids, attention_mask=attention_mask, labels=labels, return_dict=True)
            return {"loss": out.loss, "logits": out.logits}

    return Exported


def build(kind):
    if kind == "gpt2":
        # torchscript=False keeps lm_head.weight and transformer.wte.weight one tensor.
        # 4 heads: tensor parallelism splits it up to tp 4 (dist_script_tensor_parallel).
        config = GPT2Config(n_layer=2, n_embd=64, n_head=4, n_positions=64, vocab_size=VOCAB, resid_pdrop=0.0,
                            embd_pdrop=0.0, attn_pdrop=0.0, torchscript=False)
        return thin(GPT2LMHeadModel)(config)
    if kind in ("llama", "llama_gqa"):
        # Llama's layout (RMSNorm, rotary positions, SwiGLU MLP, no biases), 4 query heads and 4 key/value
        # heads (llama_gqa: 2, grouped-query attention), the head not tied; eager attention, which torch 1.13's
        # trace records op by op.
        config = LlamaConfig(vocab_size=VOCAB, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                             num_attention_heads=4, num_key_value_heads=4 if kind == "llama" else 2,
                             max_position_embeddings=64,
                             tie_word_embeddings=False, attn_implementation="eager", torchscript=False)
        return thin(LlamaForCausalLM)(config)
    # Llama's descendants, with the same sizes: Mistral (a sliding window longer than the sequence), Qwen2
    # (biases on q, k and v), Gemma (head_dim apart from hidden_size / heads, tanh GELU, tied head), OLMo
    # (norms without weights), Granite (embedding, residual, attention and logit multipliers), Cohere
    # (parallel attention and MLP, a logit scale) and StableLM (partial rotary embedding).
    families = {"mistral": (MistralConfig, MistralForCausalLM, {}),
                "qwen2": (Qwen2Config, Qwen2ForCausalLM, {}),
                "gemma": (GemmaConfig, GemmaForCausalLM, {"head_dim": 32}),
                "olmo": (OlmoConfig, OlmoForCausalLM, {}),
                "granite": (GraniteConfig, GraniteForCausalLM, {}),
                "cohere": (CohereConfig, CohereForCausalLM, {}),
                "stablelm": (StableLmConfig, StableLmForCausalLM, {})}
    if kind in families:
        config_class, model_class, extra = families[kind]
        config = config_class(vocab_size=VOCAB, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                              num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64,
                              attn_implementation="eager", torchscript=False, **extra)
        return thin(model_class)(config)
    config = BertConfig(vocab_size=VOCAB, hidden_size=64, num_hidden_layers=2, num_attention_heads=2,
                        intermediate_size=128, max_position_embeddings=64, num_labels=4, hidden_dropout_prob=0.0,
                        attention_probs_dropout_prob=0.0, torchscript=False)
    return thin(BertForSequenceClassification)(config)


def batches(kind):
    generator = torch.Generator().manual_seed(1)
    input_ids = torch.randint(0, VOCAB, (ROWS, LENGTH), generator=generator)
    lengths = torch.randint(LENGTH // 2, LENGTH + 1, (ROWS,), generator=generator)
    attention_mask = (torch.arange(LENGTH)[None, :] < lengths[:, None]).long()
    input_ids = input_ids * attention_mask  # padding id 0
    if kind != "bert":
        labels = input_ids.masked_fill(attention_mask == 0, -100)  # padding ignored by the loss
    else:
        labels = input_ids[:, 0] % 4
    return {"input_ids": input_ids, "attention_mask": attention_mask, "labels": labels}


def main():
    kind, out = sys.argv[1], sys.argv[2]
    os.makedirs(out, exist_ok=True)
    torch.manual_seed(0)
    model = build(kind)
    data = batches(kind)
    keys = json.dumps(list(model.state_dict().keys()))
    traced = torch.jit.trace(model, (data["input_ids"], data["attention_mask"], data["labels"]), strict=False)
    # The config too (what config.save_pretrained writes): save_model writes it as config.json.
    torch.jit.save(traced, os.path.join(out, "model.pt"),
                   _extra_files={"accel/state_dict_keys.json": keys,
                                 "accel/config.json": model.config.to_json_string(use_diff=True)})
    model.config.save_pretrained(out)
    shapes = {}
    for name, tensor in data.items():
        tensor.contiguous().numpy().astype("<i8").tofile(os.path.join(out, name + ".bin"))
        shapes[name] = list(tensor.shape)
    with open(os.path.join(out, "data.json"), "w") as f:
        json.dump(shapes, f)


if __name__ == "__main__":
    main()
