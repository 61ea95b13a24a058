"""Attention inside a small torch.nn.Module: the tessel def is registered as
a torch custom op (tessel.torch.op), the module runs eagerly and under
torch.compile, and both are checked against torch's scaled_dot_product_attention.

    python3 examples/python/attention_module.py
"""
import torch

import tessel
import tessel.torch

ATTENTION = """
def attention(float(B,Tq,D) Q, float(B,Tk,D) K, float(B,Tk,E) V) -> (O) {
  scores(b,i,j) +=! Q(b,i,d) * K(b,j,d)
  scores(b,i,j) = scores(b,i,j) / sqrt(D)
  rowmax(b,i) max=! scores(b,i,j)
  p(b,i,j) = exp(scores(b,i,j) - rowmax(b,i))
  denom(b,i) +=! p(b,i,j)
  O(b,i,e) +=! p(b,i,j) * V(b,j,e)
  O(b,i,e) = O(b,i,e) / denom(b,i)
}"""

attention = tessel.torch.op(tessel.compile(ATTENTION), "tessel_examples::attention")


class SelfAttention(torch.nn.Module):
    """Multi-head self-attention whose core is the tessel op."""

    def __init__(self, dim: int, heads: int):
        super().__init__()
        self.heads = heads
        self.qkv = torch.nn.Linear(dim, 3 * dim)
        self.proj = torch.nn.Linear(dim, dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, t, c = x.shape
        h = self.heads
        q, k, v = self.qkv(x).reshape(b, t, 3, h, c // h).permute(2, 0, 3, 1, 4)
        # (b, h, t, d) -> (b*h, t, d): the TC def's batch is b*h
        o = attention(q.reshape(b * h, t, -1), k.reshape(b * h, t, -1), v.reshape(b * h, t, -1))
        return self.proj(o.reshape(b, h, t, -1).transpose(1, 2).reshape(b, t, c))

    def reference(self, x: torch.Tensor) -> torch.Tensor:
        b, t, c = x.shape
        h = self.heads
        q, k, v = self.qkv(x).reshape(b, t, 3, h, c // h).permute(2, 0, 3, 1, 4)
        o = torch.nn.functional.scaled_dot_product_attention(q, k, v)
        return self.proj(o.transpose(1, 2).reshape(b, t, c))


dev = "cuda" if torch.cuda.is_available() else "cpu"
torch.manual_seed(int(torch.randint(0, 2**31 - 1, ())))
m = SelfAttention(64, 4).to(dev)
x = torch.randn(2, 37, 64, device=dev)
with torch.no_grad():
    ref = m.reference(x)
    torch.testing.assert_close(m(x), ref, rtol=1e-4, atol=1e-4)
    compiled = torch.compile(m, fullgraph=True)
    torch.testing.assert_close(compiled(x), ref, rtol=1e-4, atol=1e-4)
print(f"SelfAttention(64, 4) on {dev}, eager and torch.compile: match scaled_dot_product_attention")
