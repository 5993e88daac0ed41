"""Token sequences in Python: dict batches, dynamic padding against transformers' collators,
collate_fn callables (and their errors), length-grouped batches, bad files."""
import ast
import json
import pathlib

import numpy as np
import pytest

import accel

IDS = [[1, 2, 3], [4], [5, 6, 7, 8, 9], [10, 11], [12], [13, 14, 15]]


def test_sequences_from_lists_index_like_a_dataset():
    seqs = accel.Sequences.from_lists(IDS)
    assert len(seqs) == 6 and seqs.length(2) == 5
    assert seqs[3]["input_ids"].tolist() == [10, 11] and "labels" not in seqs[3]
    with pytest.raises(TypeError, match="sequence 1"):
        accel.Sequences.from_lists([[1], [0.5]])
    with pytest.raises(accel.AccelError, match="is not below the vocab size 10"):
        accel.Sequences.from_lists(IDS, vocab_size=10)


def _hf_collator(pad_to_multiple_of=None):
    transformers = pytest.importorskip("transformers")
    tokenizers = pytest.importorskip("tokenizers")
    vocab = {str(i): i for i in range(40)}
    vocab.update({"[PAD]": 40, "[UNK]": 41})
    tokenizer = transformers.PreTrainedTokenizerFast(
        tokenizer_object=tokenizers.Tokenizer(tokenizers.models.WordLevel(vocab, unk_token="[UNK]")),
        pad_token="[PAD]", unk_token="[UNK]")
    return transformers.DataCollatorForLanguageModeling(tokenizer, mlm=False, pad_to_multiple_of=pad_to_multiple_of,
                                                        return_tensors="np")


@pytest.mark.parametrize("multiple", [None, 4])
def test_padded_dict_batches_match_transformers_language_modeling_collator(multiple):
    hf = _hf_collator(multiple)
    seqs = accel.Sequences.from_lists(IDS)
    loader = accel.DataLoader(seqs, batch_size=4,
                              collate_fn=accel.DataCollatorWithPadding(pad_id=40, pad_to_multiple_of=multiple))
    batches = list(loader)
    assert len(batches) == 2
    for b, batch in enumerate(batches):
        assert list(batch) == ["input_ids", "attention_mask", "labels"]
        expected = hf([{"input_ids": ids} for ids in IDS[4 * b:4 * b + 4]])
        for name in batch:
            assert batch[name].numpy().tolist() == expected[name].tolist(), name


def test_max_length_truncates_or_refuses():
    seqs = accel.Sequences.from_lists(IDS)
    cut = next(iter(accel.DataLoader(seqs, batch_size=3, collate_fn=accel.DataCollatorWithPadding(
        max_length=2, truncate=True))))
    assert cut["input_ids"].numpy().tolist() == [[1, 2], [4, 0], [5, 6]]
    with pytest.raises(accel.AccelError, match="sample 0 has 3 tokens, more than max_length 2"):
        next(iter(accel.DataLoader(seqs, batch_size=3, collate_fn=accel.DataCollatorWithPadding(max_length=2))))


def pad_right(samples):
    """A user's collate_fn in the transformers style: list of sample dicts -> dict of arrays."""
    longest = max(len(s["input_ids"]) for s in samples)
    ids = np.zeros((len(samples), longest), np.int64)
    for row, sample in enumerate(samples):
        ids[row, :len(sample["input_ids"])] = sample["input_ids"]
    return {"input_ids": ids, "lengths": [len(s["input_ids"]) for s in samples]}


@pytest.mark.parametrize("num_workers", [0, 2])
def test_python_collate_fn_gives_dict_batches(num_workers):
    seqs = accel.Sequences.from_lists(IDS)
    loader = accel.DataLoader(seqs, batch_size=4, collate_fn=pad_right, num_workers=num_workers)
    assert list(loader.field_names()) == ["input_ids", "lengths"]
    batches = list(loader)
    assert batches[0]["input_ids"].numpy().shape == (4, 5)
    assert batches[0]["lengths"].numpy().tolist() == [3, 1, 5, 2]
    assert batches[1]["input_ids"].numpy().tolist() == [[12, 0, 0], [13, 14, 15]]


def test_collate_fn_exception_reaches_the_caller():
    seqs = accel.Sequences.from_lists(IDS)
    calls = []

    def failing(samples):
        calls.append(len(samples))
        if len(calls) > 1:
            raise ZeroDivisionError("the collate_fn divided by zero")
        return {"x": np.zeros(len(samples))}

    loader = accel.DataLoader(seqs, batch_size=2, collate_fn=failing)
    with pytest.raises(accel.AccelError, match="ZeroDivisionError: the collate_fn divided by zero"):
        list(loader)


def test_ragged_collate_output_names_the_field_and_shapes():
    seqs = accel.Sequences.from_lists(IDS)
    ragged = accel.DataLoader(seqs, batch_size=2, collate_fn=lambda s: {"input_ids": [x["input_ids"] for x in s]})
    with pytest.raises(accel.AccelError, match=r"ragged rows for field 'input_ids': expected every row of shape "
                                               r"\(3,\) \(row 0's\), got \(1,\) at row 1"):
        list(ragged)
    calls = []

    def too_many_rows(samples):
        calls.append(1)
        return {"y": np.zeros((len(samples) + len(calls) - 1, 2))}

    wrong_rows = accel.DataLoader(seqs, batch_size=2, collate_fn=too_many_rows)
    with pytest.raises(accel.AccelError, match=r"field 'y' has shape \[3, 2\], expected \[2, \.\.\.\]"):
        list(wrong_rows)


def _transformers_length_grouped_indices():
    """transformers' get_length_grouped_indices, read from its source (trainer_pt_utils itself needs torch 2)."""
    transformers = pytest.importorskip("transformers")
    torch = pytest.importorskip("torch")
    path = pathlib.Path(transformers.__file__).parent / "trainer_pt_utils.py"
    source = path.read_text()
    node = next(n for n in ast.parse(source).body
                if isinstance(n, ast.FunctionDef) and n.name == "get_length_grouped_indices")
    namespace = {"torch": torch}
    exec(ast.get_source_segment(source, node), namespace)
    return namespace["get_length_grouped_indices"], torch


def test_group_by_length_matches_transformers_length_grouped_sampler():
    reference, torch = _transformers_length_grouped_indices()
    lengths = [(i * 5) % 17 + 1 for i in range(90)]
    seqs = accel.Sequences.from_lists([[i % 30] * n for i, n in enumerate(lengths)])
    loader = accel.DataLoader(seqs, batch_size=4, seed=9, group_by_length=True,
                              collate_fn=lambda s: {"index": [int(x["input_ids"].size) for x in s]})
    generator = torch.Generator().manual_seed(9)  # the sampler's own, iterated once per epoch
    for _ in range(2):
        got = [length for batch in loader for length in batch["index"].numpy().tolist()]
        order = reference(lengths, 4, generator=generator)
        assert got == [lengths[i] for i in order]
    assert len(loader) == 23


def test_jsonl_bad_input_names_file_line_and_value(tmp_path):
    good = tmp_path / "ok.jsonl"
    good.write_text("\n".join(json.dumps({"input_ids": ids, "label": i % 2}) for i, ids in enumerate(IDS)) + "\n")
    seqs = accel.Sequences.from_jsonl(str(good), "input_ids", "label")
    batch = next(iter(accel.DataLoader(seqs, batch_size=2)))
    assert batch["labels"].numpy().tolist() == [0, 1]
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"input_ids": [1, 2]}\n{"input_ids": [3, 4.0]}\n')
    with pytest.raises(accel.AccelError, match=r"bad.jsonl:2: 'input_ids'\[1\] = 4.0 is not an integer id") as info:
        accel.Sequences.from_jsonl(str(bad))
    assert info.value.code == accel.core.ERR_IO
    bad.write_text('{"input_ids": [1, 2]}\n{"text": "x"}\n')
    with pytest.raises(accel.AccelError, match="bad.jsonl:2: no key 'input_ids'"):
        accel.Sequences.from_jsonl(str(bad))


def test_text_bytes_split_by_fortune_separator(tmp_path):
    text = tmp_path / "fortunes"
    text.write_bytes(b"Be kind.\n%\nTwo\nlines.\n%\n")
    seqs = accel.Sequences.from_text(str(text), accel.core.TEXT_SEPARATOR, "%")
    assert bytes(seqs[1]["input_ids"].astype(np.uint8)) == b"Two\nlines.\n"


def test_text_with_a_vocabulary(tmp_path):
    text = tmp_path / "cats.txt"
    text.write_text("the cat\n\nthe dog sat\n")
    vocab = tmp_path / "vocab.json"
    vocab.write_text(json.dumps({"<unk>": 0, "the": 5, "cat": 6, "sat": 7}))
    seqs = accel.Sequences.from_text_vocab(str(text), str(vocab))
    assert len(seqs) == 2
    assert seqs[1]["input_ids"].tolist() == [5, 0, 7]  # dog -> <unk>
    vocab.write_text(json.dumps({"the": 5, "cat": 6, "sat": 7}))
    with pytest.raises(accel.AccelError, match='cats.txt:3: the token "dog" is not in the vocabulary'):
        accel.Sequences.from_text_vocab(str(text), str(vocab))


class Rows:
    """A tokenised dataset as Hugging Face datasets yield it: dicts of lists."""

    def __init__(self):
        self.rows = [{"input_ids": ids, "label": i % 2} for i, ids in enumerate(IDS)]

    def __len__(self):
        return len(self.rows)

    def __getitem__(self, i):
        return self.rows[i]


def hf_style_collate(rows):
    batch = pad_right(rows)
    batch["labels"] = np.array([r["label"] for r in rows], np.int64)
    return batch


@pytest.mark.parametrize("num_workers", [0, 2])
def test_collate_fn_over_any_python_dataset(num_workers):
    loader = accel.DataLoader(Rows(), batch_size=4, shuffle=True, seed=3, collate_fn=hf_style_collate,
                              num_workers=num_workers)
    assert len(loader) == 2
    seen = []
    for batch in loader:
        assert list(batch) == ["input_ids", "lengths", "labels"]
        ids = batch["input_ids"].numpy()
        for row, length, label in zip(ids, batch["lengths"].numpy(), batch["labels"].numpy()):
            sample = IDS.index(row[:length].tolist())
            assert label == sample % 2
            seen.append(sample)
    assert sorted(seen) == list(range(len(IDS)))
    with pytest.raises(TypeError, match="group_by_length needs token sequences"):
        accel.DataLoader(Rows(), batch_size=2, collate_fn=hf_style_collate, group_by_length=True)
    with pytest.raises(TypeError, match="map-style dataset"):
        accel.DataLoader(iter(IDS), batch_size=2, collate_fn=hf_style_collate)
