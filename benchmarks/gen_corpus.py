#!/usr/bin/env python3
"""Generate a deterministic benchmark corpus for kb (DESIGN §7).

    python benchmarks/gen_corpus.py OUT_DIR [--scale 1|13.3] [--seed 1]

Creates a git repository in OUT_DIR holding one knowledge base:

- ``kb.toml`` (``[kb]`` / ``locale = "zh"``), ``.gitignore`` (``.kb/``);
- ``tree.md``: 5,000 hypotheses (H1, H1.1, H1.1.1, ... with correct
  Status / Evidence / Children / Parent anchor blocks and prose after them);
- ``experiments/E0001.md`` ...: 2,000 experiments (DESIGN §2.2 format);
- ``Problems/q<n>.md``: 2,000 problem cards;
- ``Propos/<category>/p<n>.md``: 3,000 propositions in 20 categories;
- ``Methods/m<n>.md``: 300 method cards;
- ``Verified/命题/p<n>.md``: 200 Verified cards for the settled propositions;
- ``DASHBOARD.md`` with a ``## Next Steps`` section.

About 7,500 files / 31 MB at scale 1.  ``--scale 13.3`` multiplies every count
(about 100,000 files) but keeps a single tree.md of at most 20,000 hypotheses.

Everything is derived from ``random.Random(seed)`` and fixed dates, and the
commit is made with pinned author/committer identity and dates, so the same
arguments give the same commit id on every machine.

The records are consistent with each other (kb verify should find no rule
violation apart from possibly a stale DASHBOARD.md, whose exact bytes only kb
itself renders):
- every Evidence ID names an existing experiment whose **Hypothesis** is that
  hypothesis, in increasing order; Status follows from the conclusions
  (any 推翻 -> 被推翻, else any 支持 -> 被支持, else any experiment -> 进行中,
  else 待验);
- 依赖 only points at lower-numbered problems / propositions (no cycles) and
  被依赖 is the exact reverse of the problems' 依赖 lists;
- a problem is 等待依赖 exactly when one of its dependencies is unsettled;
- settled propositions (已验证·真 / 已验证·假, 概率 1 / 0, 优先级 never) have
  a proof / refutation entry at 概率1 and a Verified card; no other entry in
  the corpus is at probability 0 or 1;
- 可信断言 only lists verified propositions; 上级体系 / 子方法 agree.
"""
from __future__ import annotations

import argparse
import datetime as _dt
import json
import os
import random
import shutil
import subprocess
import sys
import time
from pathlib import Path

# ---------------------------------------------------------------------------
# Sizes

BASE = {
    "hypotheses": 5000,
    "experiments": 2000,
    "problems": 2000,
    "propositions": 3000,
    "methods": 300,
    "verified": 200,
}
MAX_HYPOTHESES = 20000

CATEGORIES = [
    "数论", "代数", "组合", "几何", "分析", "拓扑", "概率论", "图论", "逻辑", "集合论",
    "优化", "信息论", "复分析", "泛函分析", "微分方程", "表示论", "代数几何", "动力系统",
    "密码学", "计算复杂性",
]

FIXED_DATE = "2026-01-15T12:00:00+00:00"
START_DAY = _dt.date(2024, 1, 2)

# ---------------------------------------------------------------------------
# Vocabulary

EN_NOUNS = [
    "the data loader", "the tokenizer", "gradient noise", "the warmup schedule",
    "the attention kernel", "the prefetch queue", "the validation split", "the learning rate",
    "the optimizer state", "mixed precision", "the JPEG decoder", "the page cache",
    "the embedding table", "the sampler", "the checkpoint writer", "label smoothing",
    "weight decay", "the retrieval index", "the reward model", "the curriculum",
    "the batch norm statistics", "the loss scale", "activation checkpointing",
    "the all-reduce step", "the shuffle buffer", "the augmentation pipeline",
    "the evaluation harness", "the cosine schedule", "the dropout rate", "the KV cache",
    "the gradient clipping threshold", "the replay buffer", "the feature store",
    "sequence packing", "the vocabulary size", "the beam width", "the teacher model",
    "the distillation loss", "the contrastive head", "the positional encoding",
]
CN_NOUNS = [
    "数据加载器", "分词器", "梯度噪声", "预热调度", "注意力内核", "预取队列", "验证集划分",
    "学习率", "优化器状态", "混合精度", "JPEG 解码", "页缓存", "嵌入表", "采样器",
    "检查点写入", "标签平滑", "权重衰减", "检索索引", "奖励模型", "课程学习", "批归一化统计量",
    "损失缩放", "激活重计算", "全规约通信", "洗牌缓冲区", "数据增强流水线", "评测脚本",
    "余弦退火", "丢弃率", "KV 缓存", "梯度裁剪阈值", "经验回放", "特征存储", "序列打包",
    "词表大小", "束宽", "教师模型", "蒸馏损失", "对比学习头", "位置编码",
]
EN_MATH = [
    "the sequence", "the lattice", "the polynomial", "the graph", "the operator",
    "the prime gaps", "the generating function", "the Galois group", "the spectral radius",
    "the covering number", "the partition function", "the Sylow subgroup", "the Banach space",
    "the Markov chain", "the chromatic number", "the Hilbert series", "the error term",
    "the exponential sum", "the fundamental domain", "the Lyapunov function",
    "the ideal class group", "the Ramsey number", "the mixing time", "the cut rank",
]
CN_MATH = [
    "该数列", "这个格", "该多项式", "这张图", "该算子", "素数间隙", "生成函数", "伽罗瓦群",
    "谱半径", "覆盖数", "配分函数", "西罗子群", "巴拿赫空间", "马尔可夫链", "色数",
    "希尔伯特级数", "误差项", "指数和", "基本区域", "李雅普诺夫函数", "理想类群", "拉姆齐数",
    "混合时间", "割秩",
]
CODES = [
    "batch_size=256", "num_workers=8", "torch.compile", "lr=3e-4", "seed=17",
    "pin_memory=True", "fp16", "grad_clip=1.0", "DataLoader", "prefetch_factor=4",
    "--max-steps 20000", "loader.py", "train.yaml", "eval_every=500", "bf16",
    "ulimit -n", "perf stat", "py-spy dump", "nvidia-smi", "torch.cuda.synchronize()",
]
MATH_CODES = [
    "gcd(a, b)", "n mod 4", "f(x) = x^2 + 1", "sage: factor(n)", "isprime(p)",
    "x ≡ 1 (mod 8)", "deg(P) ≤ d", "sum(1/k for k in range(1, n))", "ord_p(a)",
]
MATH_TEX = [
    "$n \\geq 3$", "$p \\equiv 1 \\pmod 4$", "$\\sqrt{2}$", "$|G| = p^k m$",
    "$\\sum_{k \\le n} \\mu(k) = o(n)$", "$\\lambda_1 > 0$", "$f \\in L^2(\\mathbb{R})$",
    "$\\chi(G) \\le \\Delta + 1$", "$a_{n+1} = 2a_n + 1$", "$\\varepsilon > 0$",
    "$\\deg P = d$", "$x^2 + y^2 = z^2$",
]

EN_TEMPLATES = [
    "We measured {n} at {x} ms per step, which is {p}% slower than the baseline.",
    "After switching to `{c}`, the effect on {n} disappeared almost entirely.",
    "The profile shows that {n} dominates the step time once {m} is warm.",
    "It is still unclear whether {n} or {m} explains the regression we saw on run {x}.",
    "A quick ablation with `{c}` suggests that {n} matters less than we thought.",
    "On the {x}-GPU node the variance of {n} roughly doubles.",
    "Reviewers asked us to separate the contribution of {n} from that of {m}.",
    "The numbers are noisy, so we repeated the measurement {k} times with different seeds.",
    "If {n} were the bottleneck, increasing {m} should not change throughput.",
    "This matches the earlier observation that {n} saturates at about {p}% utilisation.",
    "We keep `{c}` fixed for all runs to avoid confounding {n} with {m}.",
    "The log from run {x} contains a warning about {n} that we have not explained yet.",
    "Throughput went from {x} to {y} samples per second when we disabled {n}.",
    "Nothing in the traces points at {n}; the stalls line up with {m} instead.",
    "A colleague suggested that {n} interacts with {m} through memory pressure.",
    "We should rerun this with `{c}` before drawing conclusions.",
    "The effect is small but consistent across {k} seeds and two datasets.",
    "In the worst case {n} adds {x} ms of latency to every batch.",
    "Most of the remaining gap can be attributed to {n}.",
    "We did not expect {n} to be sensitive to {m}, but the sweep says otherwise.",
    "Plotting loss against wall time rather than steps makes the difference from {n} obvious.",
    "The baseline itself was tuned with {n} enabled, which may bias the comparison.",
]
CN_TEMPLATES = [
    "我们测得{n}每步耗时约 {x} 毫秒，比基线慢了 {p}%。",
    "把配置改成 `{c}` 之后，{n}的影响几乎消失。",
    "火焰图显示，当{m}预热完成后，{n}占据了大部分时间。",
    "目前还不清楚第 {x} 次运行的退化是由{n}还是{m}造成的。",
    "用 `{c}` 做了一个快速消融，{n}的作用比预想的小。",
    "在 {x} 卡节点上，{n}的方差大约翻了一倍。",
    "审稿人希望我们把{n}和{m}的贡献分开讨论。",
    "数据噪声较大，因此我们换了 {k} 个随机种子重复测量。",
    "如果{n}真是瓶颈，那么增大{m}不应该改变吞吐。",
    "这与之前的观察一致：{n}在大约 {p}% 利用率处饱和。",
    "所有运行都固定 `{c}`，以免把{n}和{m}混为一谈。",
    "第 {x} 次运行的日志里有一条关于{n}的警告，尚未解释。",
    "关闭{n}后，吞吐从每秒 {x} 个样本升到 {y} 个。",
    "跟踪记录里看不出{n}的问题，停顿和{m}对得上。",
    "有同事认为{n}会通过内存压力与{m}相互影响。",
    "下结论之前应该先用 `{c}` 重跑一遍。",
    "效果不大，但在 {k} 个种子和两个数据集上都稳定出现。",
    "最坏情况下，{n}会给每个批次增加 {x} 毫秒延迟。",
    "剩下的差距大部分可以归因于{n}。",
    "我们没想到{n}会对{m}敏感，但扫参结果表明确实如此。",
    "按墙钟时间而不是步数画损失曲线，{n}带来的差异就很明显了。",
    "基线本身是在开启{n}的情况下调好的，这可能让比较有偏差。",
]
EN_MATH_TEMPLATES = [
    "Consider {n} under the assumption {t}.",
    "By the previous lemma, {n} is bounded by a constant depending only on {m}.",
    "A direct computation with `{c}` confirms the claim for all cases up to {x}.",
    "The key step is to control {n} uniformly in {m}.",
    "It remains to show that {n} does not degenerate when {t}.",
    "We reduce the general case to the one where {n} is irreducible.",
    "The counterexample search found nothing below {x}, which is weak evidence at best.",
    "An induction on {m} handles the remaining cases, except when {t}.",
    "This argument breaks down if {n} has a nontrivial kernel.",
    "Compare with the classical estimate for {m}, which gives the same exponent.",
    "We expect {n} to be of order {x}, but a proof of even the weaker bound is missing.",
    "Assume for contradiction that {t}; then {n} would have to vanish.",
    "The verifiers objected that the passage from {n} to {m} is not justified.",
    "Numerically, {n} agrees with the conjectured value to {k} digits.",
    "A cleaner route goes through {m}, avoiding the case analysis entirely.",
    "The same trick was used for {n} in problem q{x}.",
]
CN_MATH_TEMPLATES = [
    "在假设 {t} 下考虑{n}。",
    "由前一引理，{n}被一个只依赖于{m}的常数控制。",
    "用 `{c}` 直接计算，验证了 {x} 以内的所有情形。",
    "关键一步是关于{m}一致地控制{n}。",
    "还需要证明当 {t} 时{n}不会退化。",
    "我们把一般情形归约到{n}不可约的情形。",
    "反例搜索在 {x} 以下一无所获，这只是很弱的证据。",
    "对{m}归纳即可处理其余情形，除了 {t} 的时候。",
    "如果{n}有非平凡核，这个论证就失效了。",
    "与{m}的经典估计比较，得到相同的指数。",
    "我们预期{n}的量级是 {x}，但连较弱的界都还没有证明。",
    "反设 {t}，那么{n}必须为零，矛盾。",
    "验证者指出，从{n}过渡到{m}的这一步缺乏论证。",
    "数值上，{n}与猜想值吻合到 {k} 位有效数字。",
    "更干净的路线是经由{m}，完全避开分类讨论。",
    "同样的技巧在问题 q{x} 中用于处理{n}。",
]

HYP_EN = [
    "{N} is the main bottleneck of training throughput",
    "{N} explains most of the variance between seeds",
    "Reducing {n} improves final accuracy",
    "{N} interacts with {m} at large batch sizes",
    "{N} causes the loss spikes after warmup",
    "Tuning {n} matters more than tuning {m}",
    "{N} is irrelevant once {m} is fixed",
    "{N} degrades calibration on the validation split",
]
HYP_CN = [
    "{n}是训练吞吐的主要瓶颈",
    "{n}解释了不同种子之间的大部分方差",
    "减小{n}能提高最终精度",
    "大批量时{n}与{m}相互作用",
    "{n}导致预热后出现损失尖峰",
    "调{n}比调{m}更重要",
    "固定{m}之后{n}无关紧要",
    "{n}会降低验证集上的校准度",
]
ACT_EN = [
    "Measure {n} with {m} disabled",
    "Ablate {n} on the small model",
    "Profile {n} under a cold page cache",
    "Sweep {n} against {m}",
    "Reproduce the regression in {n}",
    "Compare {n} across three seeds",
]
ACT_CN = [
    "关闭{m}后测量{n}",
    "在小模型上消融{n}",
    "冷页缓存下剖析{n}",
    "扫参对比{n}与{m}",
    "复现{n}的性能退化",
    "三个种子下比较{n}",
]
TITLE_EN = [
    "Bounds on {n}", "Structure of {n}", "Vanishing of {n} for large parameters",
    "Irreducibility of {n}", "Growth rate of {n}", "A sharp estimate for {n}",
    "Uniqueness of extremisers for {n}", "Parity of {n}",
]
TITLE_CN = [
    "{n}的上界", "{n}的结构", "{n}在大参数下的消失性", "{n}的不可约性", "{n}的增长速度",
    "{n}的精确估计", "{n}极值元的唯一性", "{n}的奇偶性",
]
CONDITIONS = [
    "$n \\geq 3$", "$p$ is an odd prime", "$G$ is abelian", "the graph is planar",
    "$f$ is convex", "the chain is reversible", "$k < \\log n$", "the field has characteristic 0",
]

CODE_BLOCKS = [
    "```python\n# quick check of the throughput numbers\nimport time\n\nstart = time.perf_counter()\nfor i, batch in enumerate(loader):\n    if i == {x}:\n        break\n# samples per second\nprint({x} * batch_size / (time.perf_counter() - start))\n```",
    "```bash\n# reproduce on a single node\npython train.py --config train.yaml --max-steps {x} --seed {k}\n# then collect the profile\npy-spy record -o profile.svg -- python train.py --max-steps 200\n```",
    "```python\n# brute-force search for a counterexample\nfrom math import gcd\n\ndef check(n):\n    # every pair below n\n    return all(gcd(a, n) == 1 or a % {k} == 0 for a in range(1, n))\n\nprint([n for n in range(2, {x}) if not check(n)][:10])\n```",
    "```\n## raw log excerpt\nstep {x}  loss 2.{k}31  lr 3.0e-04  tokens/s 41{k}20\nstep {y}  loss 2.{k}07  lr 3.0e-04  tokens/s 40{k}88\n```",
    "```sage\n# verify the identity for small cases\nR.<x> = PolynomialRing(QQ)\nfor n in range(1, {k} + 3):\n    P = sum(x^i for i in range(n))\n    print(n, P.factor())\n```",
]


def _cap(s: str) -> str:
    return s[:1].upper() + s[1:]


def fmt_prob(x: float) -> str:
    s = f"{x:.2f}".rstrip("0").rstrip(".")
    return s or "0"


class Prose:
    """Cheap, varied, deterministic prose."""

    def __init__(self, rng: random.Random):
        self.r = rng

    def sentence(self, cn: bool, math: bool) -> str:
        r = self.r
        if math:
            tpl = r.choice(CN_MATH_TEMPLATES if cn else EN_MATH_TEMPLATES)
            pool = CN_MATH if cn else EN_MATH
            code = r.choice(MATH_CODES)
        else:
            tpl = r.choice(CN_TEMPLATES if cn else EN_TEMPLATES)
            pool = CN_NOUNS if cn else EN_NOUNS
            code = r.choice(CODES)
        n = r.choice(pool)
        m = r.choice(pool)
        s = tpl.format(n=n, m=m, c=code, x=r.randint(2, 4000), y=r.randint(100, 9000),
                       p=r.randint(3, 95), k=r.randint(3, 12), t=r.choice(CONDITIONS))
        if not cn:
            s = _cap(s)
        return s

    def paragraph(self, math: bool = False, lo: int = 2, hi: int = 6) -> str:
        r = self.r
        cn_bias = r.random()
        out = []
        prev_en = False
        for _ in range(r.randint(lo, hi)):
            cn = r.random() < cn_bias
            s = self.sentence(cn, math)
            if math and r.random() < 0.15:
                s = s + (" 这里 " if cn else " Here ") + r.choice(MATH_TEX) + ("。" if cn else ".")
            if out and (prev_en or not cn):
                out.append(" ")
            out.append(s)
            prev_en = not cn
        return "".join(out)

    def paragraphs(self, k: int, math: bool = False) -> str:
        r = self.r
        parts = []
        for _ in range(k):
            if r.random() < 0.08:
                parts.append(self.listing(math))
            else:
                parts.append(self.paragraph(math))
        return "\n\n".join(parts)

    def listing(self, math: bool = False) -> str:
        r = self.r
        ordered = r.random() < 0.4
        items = []
        for i in range(r.randint(2, 5)):
            s = self.sentence(r.random() < 0.5, math)
            items.append(f"{i + 1}. {s}" if ordered else f"- {s}")
        return "\n".join(items)

    def code_block(self) -> str:
        r = self.r
        return r.choice(CODE_BLOCKS).format(x=r.randint(10, 5000), y=r.randint(5001, 9999),
                                            k=r.randint(3, 9))

    def title(self, math: bool) -> str:
        r = self.r
        if r.random() < 0.5:
            return r.choice(TITLE_CN).format(n=r.choice(CN_MATH).removeprefix("该").removeprefix("这个").removeprefix("这张"))
        return r.choice(TITLE_EN).format(n=r.choice(EN_MATH))

    def hypothesis(self) -> str:
        r = self.r
        if r.random() < 0.5:
            return r.choice(HYP_CN).format(n=r.choice(CN_NOUNS), m=r.choice(CN_NOUNS))
        n = r.choice(EN_NOUNS)
        return r.choice(HYP_EN).format(N=_cap(n), n=n, m=r.choice(EN_NOUNS))

    def action(self) -> str:
        r = self.r
        if r.random() < 0.5:
            return r.choice(ACT_CN).format(n=r.choice(CN_NOUNS), m=r.choice(CN_NOUNS))
        return r.choice(ACT_EN).format(n=r.choice(EN_NOUNS), m=r.choice(EN_NOUNS))


def with_code(prose: Prose, text: str, has_code: bool) -> str:
    """Append a fenced code block to a section body when the file gets one."""
    if not has_code:
        return text
    return text + "\n\n" + prose.code_block()


def jlist(ids) -> str:
    return json.dumps(list(ids), ensure_ascii=False, separators=(",", ":"))


def ts(rng: random.Random, day0: _dt.date = START_DAY, span_days: int = 700) -> str:
    d = day0 + _dt.timedelta(days=rng.randrange(span_days))
    return f"{d.isoformat()} {rng.randrange(24):02d}:{rng.randrange(60):02d}:{rng.randrange(60):02d}"


# ---------------------------------------------------------------------------
# Generators


def gen_tree_ids(rng: random.Random, n: int) -> list[str]:
    """Pre-order list of exactly n hypothesis IDs (parents before children)."""
    ids: list[str] = []

    def grow(prefix: str, depth: int) -> None:
        if len(ids) >= n:
            return
        ids.append(prefix)
        if depth == 0:
            k = rng.choices([0, 1, 2, 3, 4, 5], [10, 15, 25, 25, 15, 10])[0]
        elif depth == 1:
            k = rng.choices([0, 1, 2, 3], [40, 25, 25, 10])[0]
        elif depth == 2:
            k = rng.choices([0, 1, 2], [75, 15, 10])[0]
        elif depth < 4:
            k = rng.choices([0, 1], [90, 10])[0]
        else:  # H1.1.1.1.1 is an ###### heading, the deepest ATX level
            k = 0
        for i in range(1, k + 1):
            grow(f"{prefix}.{i}", depth + 1)

    top = 0
    while len(ids) < n:
        top += 1
        grow(f"H{top}", 0)
    return ids[:n]


def generate(out: Path, scale: float, seed: int) -> dict:
    rng = random.Random(seed)
    prose = Prose(rng)
    counts = {k: max(1, round(v * scale)) for k, v in BASE.items()}
    counts["hypotheses"] = min(counts["hypotheses"], MAX_HYPOTHESES)
    files = Writer(out)

    files["kb.toml"] = '[kb]\nlocale = "zh"\n'
    files[".gitignore"] = ".kb/\n"

    # ---------------- hypotheses and experiments ----------------
    hyp_ids = gen_tree_ids(rng, counts["hypotheses"])
    statements = {h: prose.hypothesis() for h in hyp_ids}
    children: dict[str, list[str]] = {h: [] for h in hyp_ids}
    for h in hyp_ids:
        if "." in h:
            children[h.rsplit(".", 1)[0]].append(h)

    n_exp = counts["experiments"]
    width = max(4, len(str(n_exp)))
    exp_ids = [f"E{i:0{width}d}" for i in range(1, n_exp + 1)]
    # experiments concentrate on a subset of hypotheses (realistic: some are hot)
    hot = rng.sample(hyp_ids, k=max(1, len(hyp_ids) // 4))
    evidence: dict[str, list[str]] = {h: [] for h in hyp_ids}
    exp_meta = []
    span = 730
    for i, eid in enumerate(exp_ids):
        h = rng.choice(hot) if rng.random() < 0.85 else rng.choice(hyp_ids)
        day = START_DAY + _dt.timedelta(days=(i * span) // n_exp)
        running = i >= n_exp * 0.9 and rng.random() < 0.6 or rng.random() < 0.05
        concl = None if running else rng.choices(["支持", "推翻", "不确定"], [55, 25, 20])[0]
        exp_meta.append((eid, h, day, concl))
        evidence[h].append(eid)

    conclusions: dict[str, list] = {h: [] for h in hyp_ids}
    for eid, h, day, concl in exp_meta:
        conclusions[h].append(concl)

    def status_of(h: str) -> str:
        cs = conclusions[h]
        if "推翻" in cs:
            return "被推翻"
        if "支持" in cs:
            return "被支持"
        if cs:
            return "进行中"
        return "待验"

    statuses = {h: status_of(h) for h in hyp_ids}

    tree = ["# Hypothesis Tree\n"]
    for h in hyp_ids:
        depth = h.count(".")
        lines = [f"{'#' * (2 + depth)} {h}: {statements[h]}",
                 f"Status: {statuses[h]}",
                 f"Evidence: {', '.join(evidence[h]) if evidence[h] else '(empty)'}"]
        if children[h]:
            lines.append(f"Children: {', '.join(children[h])}")
        if depth:
            lines.append(f"Parent: {h.rsplit('.', 1)[0]}")
        block = "\n".join(lines)
        x = rng.random()
        if x < 0.45:
            block += "\n\n" + prose.paragraph(lo=1, hi=4)
        elif x < 0.85:
            block += "\n\n" + prose.paragraphs(rng.randint(2, 3))
        if rng.random() < 0.01:
            block += "\n\n" + prose.code_block()
        tree.append(block + "\n")
    files["tree.md"] = "\n".join(tree)

    for eid, h, day, concl in exp_meta:
        has_code = rng.random() < 0.05
        body = [
            f"# {eid}: {h} - {prose.action()}",
            "",
            f"**Hypothesis**: {h} {statements[h]}",
            f"**Date**: {day.isoformat()}",
            f"**Status**: {'进行中' if concl is None else '已完成'}",
            "",
            "## 实验设计",
            "",
            f"**目标**: {prose.sentence(rng.random() < 0.5, False)}",
            f"**方法**: {prose.paragraph(lo=2, hi=4)}",
            f"**预期**: {prose.sentence(rng.random() < 0.5, False)}",
            "",
            prose.paragraphs(rng.randint(1, 3)),
            "",
            "## 执行记录",
            "",
        ]
        log = []
        for j in range(rng.randint(2, 6)):
            d = day + _dt.timedelta(days=j)
            log.append(f"{d.isoformat()}：{prose.paragraph(lo=2, hi=5)}")
        log.append(prose.paragraphs(rng.randint(1, 3)))
        body.append(with_code(prose, "\n\n".join(log), has_code))
        body += ["", "## 结果", ""]
        if concl is None:
            body += ["[待实验完成后填写]", "", "## 影响", "", "[待结果出来后分析]", ""]
        else:
            body += [
                f"**数据**: {rng.randint(100, 9000)} samples/s vs {rng.randint(100, 9000)} samples/s baseline, "
                f"loss {rng.uniform(1.5, 3.5):.3f}",
                f"**结论**: {concl} — {prose.sentence(rng.random() < 0.5, False)}",
                "",
                prose.paragraphs(rng.randint(1, 2)),
                "",
                "## 影响",
                "",
                prose.paragraphs(rng.randint(1, 4)),
                "",
            ]
        files[f"experiments/{eid}.md"] = "\n".join(body)

    # ---------------- propositions (needed before problems' deps) ----------------
    n_prop = counts["propositions"]
    n_prob = counts["problems"]
    prop_ids = [f"p{i}" for i in range(1, n_prop + 1)]
    prob_ids = [f"q{i}" for i in range(1, n_prob + 1)]
    settled_list = rng.sample(prop_ids, k=min(counts["verified"], n_prop))
    settled = set(settled_list)
    prop_true = {p: (rng.random() < 0.5) for p in settled_list}
    prop_cat = {p: rng.choice(CATEGORIES) for p in prop_ids}
    prop_title = {p: prose.title(True) for p in prop_ids}
    prop_stmt = {p: prose.paragraph(math=True, lo=2, hi=5) for p in prop_ids}
    settled_sorted = sorted((p for p in settled), key=lambda s: int(s[1:]))

    for idx, p in enumerate(prop_ids):
        num = idx + 1
        is_settled = p in settled
        has_code = rng.random() < 0.05
        deps = []
        if num > 10 and rng.random() < 0.2:
            deps = sorted(set(f"p{rng.randrange(1, num)}" for _ in range(rng.randint(1, 2))),
                          key=lambda s: int(s[1:]))
        src_q = f"q{rng.randint(1, n_prob)}" if (is_settled or rng.random() < 0.5) else None
        if is_settled:
            status = "已验证·真" if prop_true[p] else "已验证·假"
            prob = "1" if prop_true[p] else "0"
            prio = "never"
        else:
            status = "未定论"
            prob = fmt_prob(rng.uniform(0.01, 0.99))
            prio = str(rng.randint(0, 10))
        lines = [
            f"# 命题｜{prop_title[p]}",
            f"- 标题: {prop_title[p]}",
            f"- ID: {p}",
            "- 类型: 命题",
            f"- 状态: {status}",
            f"- 概率: {prob}",
        ]
        if rng.random() < 0.1:
            lines.append(f"- 形式化: ∀ n : ℕ, n ≥ {rng.randint(1, 9)} → P n")
        lines += [f"- 优先级: {prio}", f"- 依赖: {jlist(deps)}"]
        if src_q:
            lines.append(f"- 来源问题: {src_q}")
            if rng.random() < 0.6:
                lines.append(f"- 来源方向: d{rng.randint(1, 4)}")
        lines.append(f"- 价值/关键性: {fmt_prob(rng.uniform(0.05, 0.95))}")
        lines += ["", "## 陈述", "", prop_stmt[p], ""]

        proofs, refs = [], []
        n_pf = rng.choices([0, 1, 2, 3], [15, 30, 35, 20])[0]
        n_rf = rng.choices([0, 1, 2], [45, 40, 15])[0]
        for _ in range(n_pf):
            proofs.append([prose.title(True), fmt_prob(rng.uniform(0.05, 0.95)),
                           rng.choice(["未定论", "已验"]), prose.paragraphs(rng.randint(2, 5), math=True)])
        for _ in range(n_rf):
            refs.append([prose.title(True), fmt_prob(rng.uniform(0.05, 0.95)),
                         rng.choice(["未定论", "已验"]), prose.paragraphs(rng.randint(1, 3), math=True)])
        settling = None
        if is_settled:
            settling = ["验证证明" if prop_true[p] else "验证证伪", "1", "已验",
                        prose.paragraphs(rng.randint(1, 2), math=True)]
            (proofs if prop_true[p] else refs).append(settling)
            VERIFIED_TEXT[p] = (settling[3], prop_true[p], src_q)

        lines += ["## 证明尝试", ""]
        if proofs:
            for j, (t, pr, st, tx) in enumerate(proofs, 1):
                lines += [f"### 证明 {j}｜{t}｜概率{pr}｜状态{st}", "", tx, ""]
        else:
            lines += ["（暂无证明尝试）", ""]
        lines += ["## 证伪尝试", ""]
        if refs:
            for j, (t, pr, st, tx) in enumerate(refs, 1):
                lines += [f"### 证伪 {j}｜{t}｜概率{pr}｜状态{st}", "", tx, ""]
        else:
            lines += ["（暂无证伪尝试）", ""]
        if rng.random() < 0.4 or has_code:
            lines += ["## 经验与教训", "", with_code(prose, prose.paragraphs(rng.randint(1, 2), math=True), has_code), ""]
        files[f"Propos/{prop_cat[p]}/{p}.md"] = "\n".join(lines)

    # ---------------- Verified cards ----------------
    for p in settled_sorted:
        text, true, src_q = VERIFIED_TEXT[p]
        kind = "证明" if true else "证伪"
        lines = [
            f"# 已验证｜{prop_title[p]}",
            f"- ID: {p}",
            "- 类型: 命题",
            f"- 结论: {'真' if true else '假'}",
            f"- 概率: {'1' if true else '0'}",
            f"- 分类: {prop_cat[p]}",
            f"- 来源: {src_q}",
            f"- 时间: {ts(rng)}",
            "",
            "## 陈述",
            "",
            prop_stmt[p],
            "",
            "## 可信内容",
            "",
            f"【{kind} #1】{text}",
            "",
        ]
        files[f"Verified/命题/{p}.md"] = "\n".join(lines)

    # ---------------- problems ----------------
    prob_settled: dict[str, bool] = {}
    prob_deps: dict[str, list[str]] = {}
    prob_state: dict[str, str] = {}
    prob_prio: dict[str, str] = {}
    for idx, q in enumerate(prob_ids):
        num = idx + 1
        deps: list[str] = []
        if num > 5 and rng.random() < 0.35:
            deps += [f"q{rng.randrange(1, num)}" for _ in range(rng.randint(1, 2))]
        if rng.random() < 0.3:
            deps += [rng.choice(prop_ids) for _ in range(rng.randint(1, 2))]
        deps = list(dict.fromkeys(deps))
        prob_deps[q] = deps
        x = rng.random()
        if x < 0.05:
            state, prio = "死路", "never"
        elif x < 0.15:
            state, prio = "原始", str(rng.randint(0, 10))
        else:
            unsettled = [d for d in deps
                         if (d.startswith("q") and not prob_settled[d])
                         or (d.startswith("p") and d not in settled)]
            state = "等待依赖" if unsettled else "求解中"
            prio = str(rng.randint(0, 10))
        prob_state[q], prob_prio[q] = state, prio
        prob_settled[q] = prio == "never"
    rdeps: dict[str, list[str]] = {q: [] for q in prob_ids}
    for q in prob_ids:
        for d in prob_deps[q]:
            if d.startswith("q"):
                rdeps[d].append(q)

    for q in prob_ids:
        has_code = rng.random() < 0.05
        title = prose.title(True)
        derived = rng.random() < 0.3
        lines = [
            f"# 问题｜{title}",
            f"- 标题: {title}",
            f"- ID: {q}",
            "- 类型: 问题",
            f"- 状态: {prob_state[q]}",
        ]
        if rng.random() < 0.08:
            lines.append(f"- 形式化: ∃ x : ℤ, x ^ 2 ≡ {rng.randint(2, 30)} [ZMOD {rng.randint(3, 97)}]")
        lines += [
            f"- 优先级: {prob_prio[q]}",
            f"- 依赖: {jlist(prob_deps[q])}",
            f"- 被依赖: {jlist(rdeps[q])}",
            f"- 来源: {'后生' if derived else '原始'}",
        ]
        if derived and rng.random() < 0.5:
            lines.append(f"- 来源命题: {rng.choice(prop_ids)}")
        lines.append(f"- 计划: {rng.choice(['待调度', '下一轮尝试归纳法', '先解决依赖', 'explore two new directions', '暂停，等待验证结果'])}")
        lines += ["", "## 陈述", "", prose.paragraphs(rng.randint(1, 3), math=True), ""]
        if derived:
            lines += ["## 来源与动机", "", prose.paragraphs(rng.randint(1, 2), math=True), ""]
        lines += ["## 解法候选", ""]
        n_sol = rng.choices([0, 1, 2, 3, 4], [10, 25, 30, 20, 15])[0]
        if n_sol == 0:
            lines += ["（暂无解法候选）", ""]
        for j in range(1, n_sol + 1):
            t = prose.title(True)
            lines += [f"### 解法 {j}｜{t}｜概率{fmt_prob(rng.uniform(0.05, 0.95))}｜状态{rng.choice(['未定论', '已验'])}",
                      "", prose.paragraphs(rng.randint(2, 5), math=True), ""]
        if has_code:
            lines[-1:] = ["", prose.code_block(), ""]
        files[f"Problems/{q}.md"] = "\n".join(lines)

    # ---------------- methods ----------------
    n_meth = counts["methods"]
    meth_ids = [f"m{i}" for i in range(1, n_meth + 1)]
    n_sys = max(1, n_meth // 10)
    systems = meth_ids[:n_sys]
    parent: dict[str, str | None] = {m: None for m in meth_ids}
    subs: dict[str, list[str]] = {m: [] for m in meth_ids}
    for m in meth_ids[n_sys:]:
        if rng.random() < 0.4:
            s = rng.choice(systems)
            parent[m] = s
            subs[s].append(m)
    verified_ids = sorted(settled, key=lambda s: int(s[1:]))
    kinds = ["框架", "工具", "方法", "思想", "范式", "技巧"]
    for m in meth_ids:
        has_code = rng.random() < 0.05
        title = prose.title(True)
        trusted = sorted(rng.sample(verified_ids, k=rng.randint(1, 2)), key=lambda s: int(s[1:])) \
            if verified_ids and rng.random() < 0.15 else []
        n_app = rng.choices([0, 1, 2, 3, 5], [30, 30, 20, 12, 8])[0]
        state = "含已验证断言" if trusted else ("应用验证" if n_app >= 2 and rng.random() < 0.5 else "经验")
        related = []
        for _ in range(rng.randint(0, 3)):
            pool = rng.choice((meth_ids, prop_ids, prob_ids))
            c = rng.choice(pool)
            if c != m:
                related.append(c)
        related = list(dict.fromkeys(related))
        lines = [
            f"# 方法｜{title}",
            f"- 标题: {title}",
            f"- ID: {m}",
            f"- 类型: {'理论体系' if m in systems else rng.choice(kinds)}",
            f"- 状态: {state}",
            f"- 可信断言: {jlist(trusted)}",
            f"- 上级体系: {jlist([parent[m]] if parent[m] else [])}",
            f"- 子方法: {jlist(subs[m])}",
            f"- 相关: {jlist(related)}",
            f"- 适用场景: {prose.sentence(rng.random() < 0.6, True)}",
            "",
            "## 核心内容",
            "",
            with_code(prose, prose.paragraphs(rng.randint(4, 8), math=True), has_code),
            "",
        ]
        if rng.random() < 0.6:
            lines += ["## 定义与记号", "", prose.paragraphs(rng.randint(1, 3), math=True), ""]
        lines += ["## 应用记录", ""]
        if n_app == 0:
            lines += ["（暂无应用记录）", ""]
        for j in range(1, n_app + 1):
            d = f"方向 d{rng.randint(1, 5)}" if rng.random() < 0.7 else ""
            head = f"### 应用 {j}｜{ts(rng)}｜问题 {rng.choice(prob_ids)}" + (f" {d}" if d else "")
            lines += [head, "", prose.paragraphs(rng.randint(1, 2), math=True), ""]
        lines += ["## 改进历史", ""]
        n_ver = rng.choices([0, 1, 2, 3], [30, 40, 20, 10])[0]
        if n_ver == 0:
            lines += ["（暂无改进记录）", ""]
        reasons = ["初始版本", "补充反例", "合并重复方法", "推广到一般情形", "修正证明漏洞"]
        for j in range(1, n_ver + 1):
            lines += [f"### v{j}（{rng.choice(reasons)}）", "", prose.paragraph(math=True), ""]
        files[f"Methods/{m}.md"] = "\n".join(lines)

    # ---------------- DASHBOARD.md ----------------
    active = [h for h in hyp_ids if statuses[h] in ("待验", "进行中")]
    closed = [h for h in hyp_ids if statuses[h] in ("被支持", "被推翻")]
    latest = max(day for _, _, day, _ in exp_meta)
    dash = [
        "# Research Dashboard",
        "",
        f"- 活跃假设: {len(active)}",
        f"- 已关闭假设: {len(closed)}",
        f"- 最新实验: {latest.isoformat()}",
        "",
        "## 活跃假设",
        "",
        "| ID | 状态 | 假设 |",
        "|---|---|---|",
    ]
    dash += [f"| {h} | {statuses[h]} | {statements[h]} |" for h in active]
    dash += ["", "## 假设树", "", "```mermaid", "graph TD"]
    colors = {"待验": "todo", "进行中": "run", "被支持": "ok", "被推翻": "no"}
    edges = 0
    shown = set()
    for h in hyp_ids:
        if h.count(".") > 1 or edges >= 480:
            continue
        node = h.replace(".", "_")
        dash.append(f'    {node}["{h}"]:::{colors[statuses[h]]}')
        shown.add(h)
        if "." in h:
            dash.append(f"    {h.rsplit('.', 1)[0].replace('.', '_')} --> {node}")
            edges += 1
    dash += [
        "    classDef todo fill:#eee",
        "    classDef run fill:#ffd",
        "    classDef ok fill:#dfd",
        "    classDef no fill:#fdd",
        "```",
        "",
        f"_{len(hyp_ids) - len(shown)} deeper hypotheses are not shown._",
        "",
        "## Next Steps",
        "",
        "- 优先跑完进行中的实验，再决定是否扩展 H1 子树。",
        "- Re-check the data loader numbers on the new node before the group meeting.",
        "",
    ]
    files["DASHBOARD.md"] = "\n".join(dash)

    return {"files": files.count, "bytes": files.nbytes, "counts": counts}


VERIFIED_TEXT: dict[str, tuple] = {}


class Writer:
    """``files[rel] = text`` writes the file at once (keeps memory flat at 100k files)."""

    def __init__(self, root: Path):
        self.root = root
        self.count = 0
        self.nbytes = 0
        self.dirs: set[Path] = set()

    def __setitem__(self, rel: str, text: str) -> None:
        path = self.root / rel
        if path.parent not in self.dirs:
            path.parent.mkdir(parents=True, exist_ok=True)
            self.dirs.add(path.parent)
        data = text.encode("utf-8")
        with open(path, "wb") as f:
            f.write(data)
        self.count += 1
        self.nbytes += len(data)


def git_env() -> dict:
    env = dict(os.environ)
    for k in list(env):
        if k.startswith("GIT_"):
            del env[k]
    env.update({
        "GIT_AUTHOR_NAME": "bench",
        "GIT_AUTHOR_EMAIL": "bench@example.com",
        "GIT_COMMITTER_NAME": "bench",
        "GIT_COMMITTER_EMAIL": "bench@example.com",
        "GIT_AUTHOR_DATE": FIXED_DATE,
        "GIT_COMMITTER_DATE": FIXED_DATE,
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_CONFIG_GLOBAL": os.devnull,
        "TZ": "UTC",
    })
    return env


def git(out: Path, *args: str) -> str:
    r = subprocess.run(["git", *args], cwd=out, env=git_env(), capture_output=True, text=True)
    if r.returncode != 0:
        raise SystemExit(f"git {' '.join(args)} failed ({r.returncode}): {r.stderr.strip()}")
    return r.stdout


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("out_dir", type=Path)
    ap.add_argument("--scale", type=float, default=1.0, help="1 (~7.5k files) or 13.3 (~100k files)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--force", action="store_true", help="delete OUT_DIR first if it exists")
    ap.add_argument("--no-git", action="store_true", help="write the files only (no repository)")
    a = ap.parse_args(argv)

    out: Path = a.out_dir
    if out.exists() and any(out.iterdir()):
        if not a.force:
            print(f"error: {out} exists and is not empty (use --force)", file=sys.stderr)
            return 2
        shutil.rmtree(out)
    out.mkdir(parents=True, exist_ok=True)

    t0 = time.perf_counter()
    VERIFIED_TEXT.clear()
    info = generate(out, a.scale, a.seed)
    t1 = time.perf_counter()
    commit = None
    if not a.no_git:
        git(out, "init", "-q", "-b", "main")
        # no background auto-gc while benchmarks run; plain bytes, no conversion
        git(out, "config", "gc.auto", "0")
        git(out, "config", "core.autocrlf", "false")
        git(out, "config", "commit.gpgsign", "false")
        git(out, "config", "user.name", "bench")
        git(out, "config", "user.email", "bench@example.com")
        git(out, "add", "-A")
        git(out, "commit", "-q", "--no-verify", "-m",
            f"benchmark corpus (scale {a.scale:g}, seed {a.seed})")
        # Files written in the same second as the index are "racily clean": git
        # would re-hash them on every status call.  Refresh once after the clock
        # has moved on so the index records them as clean.
        time.sleep(1.1)
        git(out, "update-index", "-q", "--refresh")
        commit = git(out, "rev-parse", "HEAD").strip()
    t2 = time.perf_counter()
    c = info["counts"]
    print(f"corpus: {out}")
    print(f"  scale {a.scale:g}, seed {a.seed}: {c['hypotheses']} hypotheses, {c['experiments']} experiments, "
          f"{c['problems']} problems, {c['propositions']} propositions, {c['methods']} methods, "
          f"{c['verified']} verified")
    print(f"files: {info['files']}")
    print(f"bytes: {info['bytes']} ({info['bytes'] / 1e6:.1f} MB)")
    if commit:
        print(f"commit: {commit}")
    print(f"time: generate {t1 - t0:.1f} s, git {t2 - t1:.1f} s", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
