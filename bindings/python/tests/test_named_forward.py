"""Keyword forward and named parameters through the binding, on a 2-input,
2-output TorchScript module exported here with torch."""
from typing import Dict

import numpy as np
import pytest
import torch

import accel
from float32_bounds import U, assert_within, product_bound


class TwoInTwoOut(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.wte = torch.nn.Embedding(10, 4)
        self.head = torch.nn.Linear(4, 10, bias=False)
        self.head.weight = self.wte.weight  # tied, as GPT-2's lm_head

    def forward(self, input_ids: torch.Tensor, labels: torch.Tensor) -> Dict[str, torch.Tensor]:
        logits = self.head(self.wte(input_ids))
        return {"loss": torch.nn.functional.cross_entropy(logits.reshape(-1, 10), labels.reshape(-1)),
                "logits": logits}


class PlainTuple(torch.nn.Module):
    def forward(self, a: torch.Tensor, b: torch.Tensor):
        return a + b, a * b


@pytest.fixture()
def exported(tmp_path):
    torch.manual_seed(0)
    reference = TwoInTwoOut()
    path = str(tmp_path / "two.pt")
    torch.jit.script(reference).save(path)
    return reference, path


IDS = np.array([[1, 2, 3], [4, 5, 6]], dtype=np.int64)
LABELS = np.array([[2, 3, 4], [5, 6, 7]], dtype=np.int64)


def test_keyword_forward_returns_a_model_output_like_transformers(exported):
    reference, path = exported
    with accel.Model.from_torchscript(path) as model:
        out = model(labels=LABELS, input_ids=IDS)  # any order: bound by name
        assert list(out) == ["loss", "logits"]
        expected = reference(torch.from_numpy(IDS), torch.from_numpy(LABELS))
        # libaccel's kernels (oneDNN for the product) against torch's: logits are
        # 4-term products of embedding rows, within 2 K u |e|.|w| (K = 4) of each
        # other. The loss (mean over N = 6 tokens of a log-sum-exp over C = 10)
        # moves by at most 2 max|d logits| (its gradient has l1 norm <= 2 per
        # token) plus each side's rounding, (C + N + 4) u (1 + max|logit|).
        # Measured on an AMD EPYC: logits 0 (same values), loss 0.
        weight = reference.wte.weight.detach().numpy()
        logit_bound = product_bound(weight[IDS], weight.T)
        logits = expected["logits"].detach().numpy()
        assert_within(out["logits"].numpy(), logits, logit_bound, "logits")
        loss_bound = 2 * logit_bound.max() + 2 * (10 + 6 + 4) * U * (1 + np.abs(logits).max())
        assert_within(out.loss.numpy(), expected["loss"].detach().numpy(), loss_bound, "loss")
        assert out[1].numpy().shape == (2, 3, 10)
        with pytest.raises(AttributeError, match="no output 'hidden'"):
            out.hidden


def test_bad_inputs_name_the_input_and_the_expected_names(exported):
    _, path = exported
    with accel.Model.from_torchscript(path) as model:
        with pytest.raises(accel.AccelError, match=r'missing input "labels".*\(input_ids, labels\)') as error:
            model(input_ids=IDS)
        assert error.value.code == accel.core.ERR_INVALID_ARGUMENT
        with pytest.raises(accel.AccelError, match='unknown input "mask"'):
            model(input_ids=IDS, labels=LABELS, mask=IDS)
        with pytest.raises(accel.AccelError, match=r"input_ids \[2, 3\] Float"):
            model(input_ids=IDS.astype(np.float32), labels=LABELS)
        with pytest.raises(TypeError, match="not both"):
            model(IDS, labels=LABELS)


def test_named_parameters_list_a_tied_tensor_once_and_alias_the_model(exported):
    reference, path = exported
    acc = accel.Accelerator(cpu=True)
    model = accel.Model.from_torchscript(path)
    optimizer = accel.Optimizer(model, "sgd", lr=0.5)
    model, optimizer = acc.prepare(model, optimizer)
    params = dict(model.named_parameters())
    assert list(params) == ["wte.weight"]  # head.weight is the same tensor
    acc.backward(model(input_ids=IDS, labels=LABELS).loss)
    optimizer.step()
    # torch's SGD over the same module (its parameters() lists the tied tensor once).
    torch_sgd = torch.optim.SGD(reference.parameters(), lr=0.5)
    reference(torch.from_numpy(IDS), torch.from_numpy(LABELS))["loss"].backward()
    torch_sgd.step()
    # The handle read before the step sees the stepped weights: it is the parameter.
    # p - lr g on both sides: the gradient of wte sums N = 6 tokens' products
    # over K = 4 (embedding side) or C = 10 (head side), so the two gradients
    # differ by at most 2 (N + K + C) u max|g|, and the update adds u |p|.
    # Measured on an AMD EPYC: 0.
    step = reference.wte.weight.grad.abs().max().item() * 0.5
    bound = 2 * (6 + 4 + 10) * U * step + 2 * U * np.abs(reference.wte.weight.detach().numpy())
    assert_within(params["wte.weight"].numpy(), reference.wte.weight.detach().numpy(), bound, "wte.weight")


def test_plain_tuple_outputs_take_the_names_given_at_load(tmp_path):
    path = str(tmp_path / "tuple.pt")
    torch.jit.script(PlainTuple()).save(path)
    a, b = np.ones((2,), np.float32), np.full((2,), 3, np.float32)
    with accel.Model.from_torchscript(path) as model:
        assert list(model(a=a, b=b)) == ["0", "1"]
    with accel.Model.from_torchscript(path, output_names=["sum", "product"]) as model:
        out = model(a=a, b=b)
        np.testing.assert_array_equal(out.product.numpy(), [3, 3])
