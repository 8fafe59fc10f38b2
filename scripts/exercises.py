#!/usr/bin/env python3
"""Exercise mode: the functions a chapter teaches, swapped for stubs the learner fills.

Each exercise is a region of the library's own source (the solution; there is no second copy),
marked with the tutorial's snippet markers, so a chapter can also quote it:

    // --8<-- [start:ex06.softmax_backward]
    ... the solution ...
    // --8<-- [end:ex06.softmax_backward]

With the CMake option SCRATCHGRAD_EXERCISES=06 (or one exercise, 06.softmax_backward; several
separated by ',') the build compiles a copy of each such source file, made here (`splice`), in which
the region is replaced by `#include "<exercises dir>/06/softmax_backward.cpp"`: the learner's file,
pasted in place, sees everything the solution saw. The library's files are never edited.
`start` writes the stubs: each throws an sg::Error that names the exercise and gives a hint.

    python3 scripts/exercises.py list [NN]           # the exercises (of one chapter)
    python3 scripts/exercises.py start NN [--dir D] [--solutions]   # write the stubs
    python3 scripts/exercises.py sources SELECTION   # the files to splice (for CMake)
    python3 scripts/exercises.py splice SELECTION FILE OUT --dir D  # write FILE's spliced copy
    python3 scripts/exercises.py check-markers       # markers once each; chapters list theirs

scripts/exercise.sh is the learner's command (start, check, reset); docs/design.md, "Exercise
mode", says why it works this way.
"""
import argparse
import dataclasses
import pathlib
import re
import sys
import textwrap

ROOT = pathlib.Path(__file__).resolve().parent.parent


@dataclasses.dataclass(frozen=True)
class Exercise:
    chapter: str  # "01" .. "12", "13b"
    name: str  # the marker is [start:ex<chapter>.<name>]
    path: str  # the library source holding the solution, relative to the repository root
    where: str  # what the region is the body of
    hint: str  # the idea, not the answer

    @property
    def id(self):
        return f"{self.chapter}.{self.name}"

    @property
    def marker(self):
        return f"ex{self.chapter}.{self.name}"

    def message(self):
        return f"exercise {self.id}: not written yet. Hint: {self.hint}"


EXERCISES = [
    Exercise(
        "01", "contiguous_strides", "autograd/shape.cpp",
        "Strides contiguous_strides(const Shape& shape)",
        "the last dim has stride 1, and each dim to its left steps over one whole row of the dims "
        "to its right: walk the shape from the right, multiplying. A size-0 dim counts as 1, and a "
        "product that overflows saturates at INT64_MAX.",
    ),
    Exercise(
        "01", "is_contiguous", "autograd/tensor.cpp",
        "bool Tensor::is_contiguous() const",
        "contiguous means the strides are exactly what contiguous_strides would give, walking "
        "from the last dim with an expected stride that starts at 1 and grows by each size. A "
        "dim of size 1 is never stepped along, so its stride does not matter (PyTorch agrees).",
    ),
    Exercise(
        "01", "transpose", "autograd/ops/views.cpp",
        "Tensor transpose(const Tensor& x, int64_t dim0, int64_t dim1, CallSite site), after its "
        "call-site bookkeeping",
        "a transpose copies nothing: it is a view (make_view) of the same storage whose shape and "
        "strides have the two dims swapped. Normalize negative dims first (normalize_dim); its "
        "backward transposes the gradient back (record).",
    ),
    Exercise(
        "02", "broadcast_shapes", "autograd/shape.cpp",
        "Shape broadcast_shapes(std::string_view op, const Shape& a, const Shape& b)",
        "align the shapes at their last dim; a missing dim counts as 1; two sizes are compatible "
        "when equal or when one of them is 1, and the result takes the other. Refuse the rest "
        "with an sg::Error naming op, both shapes and the dim.",
    ),
    Exercise(
        "02", "sum_to", "autograd/ops/reduce.cpp",
        "Tensor sum_to(const Tensor& x, const Shape& shape, CallSite site), after its call-site "
        "bookkeeping",
        "the gradient of a broadcast input is summed over every dim broadcasting created: the "
        "leading dims x has beyond `shape`, and the dims where `shape` has size 1 but x does not. "
        "Sum those with keepdim, then view the result as `shape`.",
    ),
    Exercise(
        "03", "topological_order", "autograd/engine.cpp",
        "std::vector<Node*> topological_order(const std::vector<Node*>& roots, "
        "std::unordered_map<Node*, int> deps)",
        "Kahn's algorithm: deps[n] counts the edges pointing at node n. Start with the roots whose "
        "count is 0; each node you emit decrements the count of every node its edges() point at, "
        "and a node whose count reaches 0 is ready. No recursion: graphs can be 10^5 nodes deep.",
    ),
    Exercise(
        "03", "accumulate_into_leaf", "autograd/engine.cpp",
        "void accumulate_into_leaf(TensorImpl& leaf, Tensor grad)",
        "a leaf used twice receives two gradients, and .grad() must hold their sum. The first one "
        "can be stored as is only if nothing else shares its memory (storage.use_count() > 1 or "
        "not contiguous: clone it); later ones are added with a new tensor, never in place.",
    ),
    Exercise(
        "04", "matmul_backward", "autograd/ops/matmul.cpp",
        "the backward lambda of Tensor matmul(const Tensor& a, const Tensor& b, CallSite site): "
        "it gets g, the gradient of C, and has captured saved_a and saved_b (SavedTensor: .get(); "
        "each saved only when the other operand's gradient is needed), a_dim, b_dim, need_da, "
        "need_db and b_transposed; it returns Grads{da, db}",
        "C = A·B gives dA = dC·Bᵀ and dB = Aᵀ·dC, each computed by matmul itself on transposed "
        "views. View vector operands as matrices first (as_left_matrix, as_right_matrix, "
        "as_matrix_result; their recorded_ twins when is_grad_enabled()) and squeeze the "
        "gradient back; compute only what need_da / need_db ask for.",
    ),
    Exercise(
        "05", "sgd_update", "nn/optim/sgd.cpp",
        "void SGD::update(size_t i, Tensor& param, const Tensor& grad)",
        "p -= lr·d, where d is the gradient plus weight_decay·p; with momentum, the buffer "
        "(buffer(\"momentum_buffer\", i)) starts at d on the first step (param_step(i) == 1) and "
        "is then b = momentum·b + (1 - dampening)·d, and d becomes b (or d + momentum·b with "
        "nesterov). The options and the lr are those of parameter i's group: "
        "options(group_of(i)), lr(group_of(i)). Never change grad itself.",
    ),
    Exercise(
        "05", "warmup_cosine", "nn/optim/lr_scheduler.cpp",
        "double WarmupCosineLR::lr_at(int64_t step, double base) const",
        "a linear ramp from 0 to the base lr (the group's, `base`) over `warmup` steps, then "
        "half a cosine from the base lr down to min_lr at step `total`, and min_lr after it.",
    ),
    Exercise(
        "06", "softmax_backward", "autograd/backend/cpu/softmax.cpp",
        "void CpuBackend::softmax_backward(const Tensor& grad, const Tensor& y, int64_t dim, "
        "bool log, const Tensor& out)",
        "for y = softmax(x) along a row, dx = y ⊙ (g - Σ g⊙y); for y = log_softmax(x), dx = g - "
        "exp(y)·Σ g. dim_layout(y.shape(), dim) gives outer × D × inner; element d of a row sits "
        "at o·D·inner + i + d·inner. Sum in double.",
    ),
    Exercise(
        "06", "cross_entropy", "autograd/ops/cross_entropy.cpp",
        "Tensor nll_of_log_probs(const Tensor& log_probs, const Tensor& target, int64_t "
        "ignore_index, double eps, Reduction mode): the loss from ops, its arguments already "
        "checked (log_probs [N, C], what log_softmax gave cross_entropy or what nll_loss was "
        "given; target int64 [...] with N elements); mode is Reduction::None, Sum or Mean",
        "target as a column [N, 1]; gather each row's target "
        "(where it is ignore_index, point it at class 0 with where() so gather gets a real "
        "class); the row loss is (1 - eps)(-log p_t) - eps Σ_c log p_c / C, then 0 for ignored "
        "rows (where, not a multiply: 0 · -inf is NaN). None: the target's shape; Sum: the sum; "
        "Mean: the sum over the rows not ignored, divided by their count.",
    ),
    Exercise(
        "07", "attention", "autograd/ops/attention.cpp",
        "std::pair<Tensor, Tensor> attention_composed(q, k, v, mask, scale, dropout_p, training)",
        "scores = (q·scale)·kᵀ, [..., T, S]; softmax along the keys, through masked_softmax when "
        "a mask is given (blocked keys get weight exactly 0); the weights, dropped out when "
        "training, multiply v. Return the output and the (undropped) weights.",
    ),
    Exercise(
        "07", "causal_mask", "nn/attention.cpp",
        "Tensor make_causal_mask(int64_t T, Device device)",
        "query t may look at key j exactly when j <= t. Compare a column of positions [T, 1] "
        "with a row [1, T] (arange on `device`): broadcasting makes the [T, T] table; return it "
        "as [1, 1, T, T]. Refuse a negative T.",
    ),
    Exercise(
        "08", "split_heads", "nn/multihead_attention.cpp",
        "Tensor MultiheadAttention::split_heads(const Tensor& x) const",
        "[B, L, D] -> [B, H, L, Dh]: D = H·Dh is contiguous, so a view splits it into [B, L, H, "
        "Dh] with no copy; then swap L and H, again without copying.",
    ),
    Exercise(
        "08", "merge_heads", "nn/multihead_attention.cpp",
        "Tensor MultiheadAttention::merge_heads(const Tensor& x) const",
        "undo the split: [B, H, T, Dh] -> [B, T, H, Dh] by swapping dims 1 and 2, then read the "
        "last two dims as one of size d_model. After the swap they are no longer adjacent in "
        "memory, so view refuses it: reshape copies when it must.",
    ),
    Exercise(
        "09", "layer_norm", "autograd/ops/normalization.cpp",
        "Tensor layer_norm_composed(const Tensor& x, const Shape& normalized_shape, const Tensor& "
        "weight, const Tensor& bias, double eps, CallSite site), after its checks",
        "normalize over the last normalized_shape.size() dims: (x - mean) / sqrt(var + eps) with "
        "the biased variance (divide by n), keepdim so it broadcasts; then scale by weight and "
        "shift by bias when they are defined. Ops only: autograd derives the backward.",
    ),
    Exercise(
        "10", "sinusoidal_table", "nn/positional_encoding.cpp",
        "the table loop of SinusoidalPositionalEncoding's constructor (fill `table`, max_len × "
        "d_model doubles, row-major)",
        "column pair (2i, 2i+1) of row t holds sin and cos of t / 10000^(2i/d_model); compute the "
        "frequency as exp(-2i·ln(10000)/d_model). An odd d_model has a last sine with no cosine.",
    ),
    Exercise(
        "11", "decoder_layer", "nn/transformer_decoder.cpp",
        "Tensor DecoderLayer::run(const Tensor& x, const Attend& attend_self, const Attend& "
        "attend_memory)",
        "three sublayers, each wrapped in dropout (dropout1..3) and a residual: masked "
        "self-attention, attention over the memory, the feed-forward net. Post-LN: h = norm(h + "
        "sublayer(h)); pre-LN (norm_first): h = h + sublayer(norm(h)). Keep each attention's "
        "weights (detached) in last_self_attention / last_cross_attention.",
    ),
    Exercise(
        "12", "target_mask", "nn/transformer.cpp",
        "Tensor Transformer::target_mask(const Tensor& tgt) const",
        "a target position may attend to key j when j is not padding AND j <= its own position: "
        "combine make_padding_mask ([B, 1, 1, T]) and make_causal_mask ([1, 1, T, T]) with "
        "logical_and. Check the tokens first (check_tokens).",
    ),
    Exercise(
        "12", "noam_lr", "nn/optim/lr_scheduler.cpp",
        "double NoamLR::lr_at(int64_t step, double base_lr) const (members d_model, warmup, "
        "factor)",
        "the chapter's formula, factor · d_model^-0.5 · min(step^-0.5, step · warmup^-1.5), times "
        "the group's base_lr (1 for the paper's values), as LambdaLR scales it: its "
        "two branches meet at step = warmup, a linear warm-up before and 1/√step after. Step 0 "
        "has no step^-0.5: count it as step 1, as the Annotated Transformer does under LambdaLR.",
    ),
    Exercise(
        "13b", "float_to_bfloat16", "autograd/bfloat16.cpp",
        "uint16_t float_to_bfloat16_bits(float value)",
        "keep the upper 16 of the float's 32 bits (std::bit_cast<uint32_t>), rounded by the lower "
        "16: what must be added before the shift so that a lower half above 0x8000 carries into "
        "the kept bits, one below does not, and exactly 0x8000 goes to the even neighbour? The "
        "kept half's lowest bit says which one is even. Test NaN first.",
    ),
]

MARKER_NAME = re.compile(r"--8<-- \[(start|end):(ex\d\d[a-z]?\.\w+)\]")


def chapters():
    return sorted({e.chapter for e in EXERCISES})


def select(selection):
    """The exercises a selection names: "06", "06.softmax_backward", or several joined by ','."""
    chosen = []
    for item in filter(None, re.split(r"[,;\s]+", selection)):
        item = item.zfill(2) if item.isdigit() else item
        matches = [e for e in EXERCISES if item in (e.chapter, e.id)]
        if not matches:
            known = ", ".join(chapters())
            raise SystemExit(
                f"exercises: no exercise '{item}' (chapters with exercises: {known}; "
                f"`python3 scripts/exercises.py list` names them all)"
            )
        chosen += [e for e in matches if e not in chosen]
    return chosen


def region(exercise, lines):
    """(start, end): the indices of the start and end marker lines of `exercise` in `lines`."""
    start = [i for i, line in enumerate(lines) if f"--8<-- [start:{exercise.marker}]" in line]
    end = [i for i, line in enumerate(lines) if f"--8<-- [end:{exercise.marker}]" in line]
    if len(start) != 1 or len(end) != 1 or end[0] <= start[0]:
        raise SystemExit(
            f"exercises: {exercise.path} must hold exactly one marker pair "
            f"[start:{exercise.marker}] ... [end:{exercise.marker}]"
        )
    return start[0], end[0]


def read_lines(path):
    return (ROOT / path).read_text(encoding="utf-8").splitlines()


def solution(exercise):
    """The solution's text (the marked region), dedented."""
    lines = read_lines(exercise.path)
    start, end = region(exercise, lines)
    return textwrap.dedent("\n".join(lines[start + 1 : end])).strip("\n") + "\n"


def learner_file(directory, exercise):
    return pathlib.Path(directory) / exercise.chapter / f"{exercise.name}.cpp"


def stub_text(exercise, with_solution=False):
    hint = textwrap.fill(
        "Hint: " + exercise.hint, width=96, initial_indent="// ", subsequent_indent="// "
    )
    what = exercise.where if exercise.where.startswith("the ") else "the body of " + exercise.where
    where = textwrap.fill(what, width=96, initial_indent="//   ", subsequent_indent="//   ")
    body = solution(exercise) if with_solution else f"throw sg::Error({cpp_string(exercise.message())});\n"
    return (
        f"// Exercise {exercise.id} (chapter {exercise.chapter.lstrip('0')}). Write, in {exercise.path},\n"
        f"{where}\n"
        "// The build pastes this file there in place of the solution, so the parameters, that file's\n"
        "// includes and its helpers are all in scope; it is never compiled alone.\n"
        "//\n"
        f"{hint}\n"
        "//\n"
        f"// Test it:         bash scripts/exercise.sh check {exercise.chapter}\n"
        f"// Solutions back:  bash scripts/exercise.sh reset {exercise.chapter}   (keeps your files in exercises/.old/)\n"
        "\n"
        f"{body}"
    )


def cpp_string(text):
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def check_folder(directory):
    """The learner's folder is named in an #include of the spliced library files, where a C++
    header name cannot hold a double quote, a backslash or a control character: refused up front
    (the build failed later with a confusing compiler error)."""
    path = str(pathlib.Path(directory).resolve())
    bad = sorted({c for c in path if c in '"\\' or ord(c) < 32 or ord(c) == 127})
    if bad:
        shown = ", ".join(repr(c) for c in bad)
        raise SystemExit(f"exercises: the folder {path!r} has {shown} in its path, which an "
                         "#include cannot name (EXERCISES_DIR chooses another folder)")


def cmd_list(args):
    for e in select(args.chapter) if args.chapter else EXERCISES:
        print(f"{e.id:32} {e.path}")
    return 0


def cmd_start(args):
    check_folder(args.dir)
    for e in select(args.selection):
        target = learner_file(args.dir, e)
        if target.exists() and not args.force:
            print(f"kept    {target} (already there; reset deletes it)")
            continue
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(stub_text(e, args.solutions), encoding="utf-8")
        except OSError as error:
            raise SystemExit(f"exercises: cannot write {target}: {error.strerror} "
                             "(EXERCISES_DIR chooses another folder)") from None
        print(f"wrote   {target}")
    return 0


def cmd_sources(args):
    for path in sorted({e.path for e in select(args.selection)}):
        print(path)
    return 0


def cmd_splice(args):
    """Writes a copy of args.file whose selected regions #include the learner's files."""
    check_folder(args.dir)
    chosen = [e for e in select(args.selection) if e.path == args.file]
    lines = read_lines(args.file)
    source = (ROOT / args.file).as_posix()
    regions = sorted((region(e, lines), e) for e in chosen)
    out = [
        f"// Generated by scripts/exercises.py for SCRATCHGRAD_EXERCISES={args.selection}: {args.file}",
        "// with exercise regions taken from the learner's files. Edit those, not this.",
        # A stub leaves parameters and locals of the solution unused.
        '#pragma GCC diagnostic ignored "-Wpragmas"',
        '#pragma GCC diagnostic ignored "-Wunknown-warning-option"',
        '#pragma GCC diagnostic ignored "-Wunused-parameter"',
        '#pragma GCC diagnostic ignored "-Wunused-variable"',
        '#pragma GCC diagnostic ignored "-Wunused-but-set-variable"',
        '#pragma GCC diagnostic ignored "-Wunused-but-set-parameter"',
        '#pragma GCC diagnostic ignored "-Wunused-function"',
        '#pragma GCC diagnostic ignored "-Wunused-lambda-capture"',
        '#pragma GCC diagnostic ignored "-Wunused-local-typedefs"',
        f"#line 1 {cpp_string(source)}",
    ]
    position = 0
    for (start, end), e in regions:
        out += lines[position : start + 1]
        learner = learner_file(args.dir, e).resolve()
        if not learner.is_file():
            raise SystemExit(
                f"exercises: {learner} is missing: run `bash scripts/exercise.sh start {e.chapter}`"
            )
        out.append(f'#include "{learner.as_posix()}"')
        out.append(f"#line {end + 1} {cpp_string(source)}")
        position = end
    out += lines[position:]
    text = "\n".join(out) + "\n"
    target = pathlib.Path(args.out)
    target.parent.mkdir(parents=True, exist_ok=True)
    if not target.exists() or target.read_text(encoding="utf-8") != text:
        target.write_text(text, encoding="utf-8")
    return 0


def cmd_check_markers(args):
    """Every exercise's marker pair exists once; every exercise marker in the sources is listed;
    every chapter 1-12 has exercises, and its page names them."""
    errors = []
    for e in EXERCISES:
        try:
            region(e, read_lines(e.path))
        except SystemExit as error:
            errors.append(str(error))
    known = {e.marker for e in EXERCISES}
    for folder in ["autograd", "nn", "train", "examples"]:
        for path in sorted((ROOT / folder).rglob("*")):
            if path.suffix not in {".cpp", ".h", ".cu"}:
                continue
            for m in MARKER_NAME.finditer(path.read_text(encoding="utf-8")):
                if m.group(2) not in known:
                    errors.append(f"exercises: {path.relative_to(ROOT)} marks {m.group(2)}, "
                                  "which scripts/exercises.py does not list")
    for chapter in [f"{n:02}" for n in range(1, 13)]:
        if chapter not in chapters():
            errors.append(f"exercises: chapter {chapter} has no exercise")
    # Each chapter's page lists its exercises and the commands (its "Exercises" section).
    for chapter in chapters():
        pages = sorted((ROOT / "docs").glob(f"{chapter}-*.md"))
        text = pages[0].read_text(encoding="utf-8") if pages else ""
        for needed in [f"`{e.id}`" for e in EXERCISES if e.chapter == chapter] + [
            f"bash scripts/exercise.sh start {chapter}"
        ]:
            if needed not in text:
                errors.append(f"exercises: docs/{chapter}-*.md does not mention {needed}")
    for error in errors:
        print(error, file=sys.stderr)
    if errors:
        return 1
    print(f"exercises: all {len(EXERCISES)} exercises of chapters {chapters()[0]}-{chapters()[-1]} "
          "have their markers")
    return 0


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("list")
    p.add_argument("chapter", nargs="?")
    p.set_defaults(run=cmd_list)
    p = sub.add_parser("start")
    p.add_argument("selection")
    p.add_argument("--dir", default=str(ROOT / "exercises"))
    p.add_argument("--solutions", action="store_true", help="write the solutions, not stubs (CI)")
    p.add_argument("--force", action="store_true", help="overwrite existing files")
    p.set_defaults(run=cmd_start)
    p = sub.add_parser("sources")
    p.add_argument("selection")
    p.set_defaults(run=cmd_sources)
    p = sub.add_parser("splice")
    p.add_argument("selection")
    p.add_argument("file")
    p.add_argument("out")
    p.add_argument("--dir", default=str(ROOT / "exercises"))
    p.set_defaults(run=cmd_splice)
    p = sub.add_parser("check-markers")
    p.set_defaults(run=cmd_check_markers)
    args = parser.parse_args()
    return args.run(args)


if __name__ == "__main__":
    sys.exit(main())
