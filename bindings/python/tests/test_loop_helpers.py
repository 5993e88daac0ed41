"""What an evaluation loop needs around the model (issue 18 item 5), checked
against torch on the same inputs: acc.no_grad(), cross-entropy options and the
causal LM loss, the metric tensor operations, load_state_dict, send_to_device."""
import numpy as np
import pytest
import torch
import torch.nn.functional as F

import accel
from float32_bounds import U, assert_within, mean_bound
from test_named_forward import IDS, LABELS, exported  # noqa: F401 (a fixture)

RNG = np.random.default_rng(0)
SCORES = RNG.standard_normal((5, 7)).astype(np.float32)
LOGITS = RNG.standard_normal((2, 6, 7)).astype(np.float32)


def loss_bound(logits, rows):
    """Two float32 cross-entropies (mean over `rows` of a log-sum-exp over C
    classes, and with label smoothing a C-term mean of log-probabilities) summed
    in any order: 2 (2 C + rows + 4) u (1 + max|logit|)."""
    classes = logits.shape[-1]
    return 2 * (2 * classes + rows + 4) * U * (1 + float(np.abs(logits).max()))


def test_no_grad_scopes_nest_and_restore():
    acc = accel.Accelerator(cpu=True)
    model = accel.Model.from_json('[{"type": "Linear", "in_features": 3, "out_features": 1}]')
    x = accel.tensor(np.ones((2, 3), dtype=np.float32))
    with acc.no_grad():
        with acc.no_grad():
            pass
        loss = model(x).sum()  # still inside the outer scope
        with pytest.raises(accel.AccelError, match="does not require grad"):
            acc.backward(loss)
    acc.backward(model(x).sum())
    with pytest.raises(accel.AccelError, match="no_grad_end without a matching no_grad_begin") as error:
        acc.no_grad_end()
    assert error.value.code == accel.core.ERR_STATE


@pytest.mark.parametrize("ignore_index,label_smoothing", [(-100, 0.0), (2, 0.0), (-100, 0.3), (4, 0.1)])
def test_cross_entropy_options_match_torch(ignore_index, label_smoothing):
    target = np.array([1, -100, 4, 2, 6], dtype=np.int64)
    if ignore_index != -100:
        target[1] = 0
    got = accel.tensor(SCORES).loss("cross_entropy", accel.tensor(target), ignore_index=ignore_index,
                                    label_smoothing=label_smoothing).item()
    want = F.cross_entropy(torch.from_numpy(SCORES), torch.from_numpy(target), ignore_index=ignore_index,
                           label_smoothing=label_smoothing).item()
    assert_within(got, want, loss_bound(SCORES, 5), "cross_entropy")  # measured on an AMD EPYC: 0


def test_causal_lm_loss_is_hugging_face_shifted_loss():
    labels = RNG.integers(0, 7, (2, 6)).astype(np.int64)
    labels[1, 4:] = -100  # padding
    logits, target = torch.from_numpy(LOGITS), torch.from_numpy(labels)
    want = F.cross_entropy(logits[:, :-1].reshape(-1, 7), target[:, 1:].reshape(-1), label_smoothing=0.1).item()
    got = accel.tensor(LOGITS).loss("causal_lm", accel.tensor(labels), label_smoothing=0.1).item()
    assert_within(got, want, loss_bound(LOGITS, 10), "causal_lm")  # measured on an AMD EPYC: 0
    with pytest.raises(accel.AccelError, match=r"the labels must have shape \[2, 6\]"):
        accel.tensor(LOGITS).loss("causal_lm", accel.tensor(labels[:, :5]))
    with pytest.raises(accel.AccelError, match="label_smoothing must be in"):
        accel.tensor(SCORES).loss("cross_entropy", accel.tensor(np.zeros(5, np.int64)), label_smoothing=2.0)


def test_metric_operations_match_torch():
    x, t = accel.tensor(SCORES), torch.from_numpy(SCORES)
    # softmax: exp(x - max) has relative error (|x - max| + 1) u (the rounded
    # difference, amplified by exp, then exp's own ulp), the 7-term sum 7 u and
    # the division u; two sides: 2 (|x - max| + 9) u, relative, all positive.
    # Measured on an AMD EPYC: 0.
    spread = (SCORES.max(-1, keepdims=True) - SCORES).astype(np.float64)
    want_softmax = torch.softmax(t, -1).numpy()
    assert_within(x.softmax(-1).numpy(), want_softmax, 2 * (spread + 9) * U * want_softmax, "softmax")
    values, indices = x.topk(3, dim=1)
    want = torch.topk(t, 3, dim=1)
    np.testing.assert_array_equal(values.numpy(), want.values.numpy())
    np.testing.assert_array_equal(indices.numpy(), want.indices.numpy())
    # Means of K terms that may be summed in other orders (and cancel: no rtol).
    # Measured on an AMD EPYC: 0 and 0.
    assert_within(x.mean().item(), t.mean().item(), mean_bound(SCORES), "mean")
    assert_within(x.mean(dim=0).numpy(), t.mean(0).numpy(), mean_bound(SCORES, axis=0), "mean(dim=0)")
    assert x.reshape(7, 5).shape() == (7, 5) and x.reshape([-1]).shape() == (35,)
    np.testing.assert_array_equal(x.narrow(1, 2, 3).numpy(), SCORES[:, 2:5])
    for name in ("eq", "ne", "lt", "le", "gt", "ge"):
        np.testing.assert_array_equal(getattr(x, name)(0.25).numpy(), getattr(t, name)(0.25).numpy())
    # Top-1 accuracy as an eval loop computes it: a bool mean.
    labels = np.array([0, 1, 2, 3, 4], dtype=np.int64)
    accuracy = x.argmax(1).eq(labels).mean().item()
    assert accuracy == pytest.approx(float((SCORES.argmax(1) == labels).mean()))
    with pytest.raises(accel.AccelError, match=r"narrow: start 6 and length 2 do not fit dim 1 of shape \[5, 7\]"):
        x.narrow(1, 6, 2)
    with pytest.raises(accel.AccelError, match=r"topk: dim 2 is out of range"):
        x.topk(1, dim=2)
    with pytest.raises(accel.AccelError, match=r"cannot take shape \[6, -1\]"):
        x.reshape(6, -1)


def test_load_state_dict_returns_the_skipped_names_as_torch_does(tmp_path):
    torch.manual_seed(0)
    reference = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.ReLU(), torch.nn.Linear(4, 2))
    path = str(tmp_path / "mlp.pt")
    torch.jit.script(reference).save(path)
    model = accel.Model.from_torchscript(path)
    full = {name: p.detach().numpy() + 1 for name, p in reference.state_dict().items()}
    # Two names missing, two unexpected (given sorted: torch keeps the dict's order, we sort).
    partial = {"0.weight": full["0.weight"], "2.bias": full["2.bias"],
               "extra.a": np.zeros(1, np.float32), "extra.b": np.zeros(2, np.float32)}
    ours = model.load_state_dict(partial, strict=False)
    theirs = reference.load_state_dict({k: torch.from_numpy(v) for k, v in partial.items()}, strict=False)
    assert ours == (["0.bias", "2.weight"], ["extra.a", "extra.b"])
    assert (ours.missing_keys, ours.unexpected_keys) == (theirs.missing_keys, theirs.unexpected_keys)
    missing, unexpected = ours  # the unpacking a ported script does
    assert missing == ["0.bias", "2.weight"] and unexpected == ["extra.a", "extra.b"]
    np.testing.assert_array_equal(dict(model.named_parameters())["2.bias"].numpy(), full["2.bias"])
    matched = model.load_state_dict(full)
    assert matched == ([], []) and repr(matched) == repr(reference.load_state_dict(
        {k: torch.from_numpy(v) for k, v in full.items()}))  # "<All keys matched successfully>"


def test_load_state_dict_round_trip_and_all_or_nothing(exported):  # noqa: F811
    reference, path = exported
    # Tied copies (head.weight is wte.weight) carry the same values, as a saved state dict does.
    source = {name: p.detach().numpy() * 0 + 0.5 for name, p in reference.state_dict().items()}
    model = accel.Model.from_torchscript(path)
    before = {name: t.numpy() for name, t in model.named_parameters()}
    bad = dict(source, **{"wte.weight": np.zeros((3, 4), np.float32)})
    with pytest.raises(accel.AccelError, match=r'tensor "wte.weight" has shape \[3, 4\], the model\'s has \[10, 4\]'):
        model.load_state_dict(bad)
    for name, t in model.named_parameters():
        np.testing.assert_array_equal(t.numpy(), before[name])
    with pytest.raises(accel.AccelError, match="unexpected extra"):
        model.load_state_dict(dict(source, extra=np.zeros(1, np.float32)))
    model.load_state_dict(dict(source, extra=np.zeros(1, np.float32)), strict=False)
    acc = accel.Accelerator(cpu=True)
    got = acc.get_state_dict(model)
    np.testing.assert_array_equal(got["wte.weight"], source["wte.weight"])  # the tied pair is listed once
    reference.load_state_dict({name: torch.from_numpy(a) for name, a in source.items()})
    out = model(input_ids=IDS, labels=LABELS)
    # Every weight is 0.5: each logit is 4 products 0.25, summed exactly in any order.
    np.testing.assert_array_equal(out.logits.numpy(), reference(torch.from_numpy(IDS), torch.from_numpy(LABELS))["logits"]
                                  .detach().numpy())


def test_send_to_device_places_tensors_and_mappings():
    acc = accel.Accelerator(cpu=True)
    placed = acc.send_to_device({"input_ids": IDS, "labels": accel.tensor(LABELS)})
    assert list(placed) == ["input_ids", "labels"]
    np.testing.assert_array_equal(placed["input_ids"].numpy(), IDS)
    np.testing.assert_array_equal(acc.send_to_device(SCORES).numpy(), SCORES)


def test_send_to_device_walks_nested_containers_and_skips_keys():
    # Accelerate's send_to_device: lists, tuples, namedtuples and mappings at any depth keep
    # their type; non-tensors stay as they are; skip_keys leaves those entries untouched.
    import collections
    Pair = collections.namedtuple("Pair", "a b")
    acc = accel.Accelerator(cpu=True)
    batch = {"inputs": [SCORES, (IDS, "tag")], "pair": Pair(SCORES, 3), "meta": {"ids": IDS, "raw": IDS}}
    placed = acc.send_to_device(batch, skip_keys=["raw"])
    assert isinstance(placed["inputs"], list) and isinstance(placed["inputs"][1], tuple)
    assert isinstance(placed["inputs"][0], accel.Tensor) and placed["inputs"][1][1] == "tag"
    np.testing.assert_array_equal(placed["inputs"][1][0].numpy(), IDS)
    assert isinstance(placed["pair"], Pair) and isinstance(placed["pair"].a, accel.Tensor) and placed["pair"].b == 3
    assert isinstance(placed["meta"]["ids"], accel.Tensor) and placed["meta"]["raw"] is IDS
    assert acc.send_to_device({"x": IDS}, skip_keys="x")["x"] is IDS
