#include "tools/value_dump.h"

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "extension/npy.h"
#include "runtime/core/log.h"

namespace tern {

namespace {

// "mul_3" -> "mul": a node's kind, its name without the "_N" torch.fx adds.
std::string node_kind(const char* node, size_t n) {
  size_t end = n;
  while (end > 0 && node[end - 1] >= '0' && node[end - 1] <= '9') --end;
  if (end > 0 && end < n && node[end - 1] == '_') return std::string(node, end - 1);
  return std::string(node, n);
}

#ifdef TERN_RUN_TEST_BREAK
// A test build's broken kernel (value_dump.h): every float of t moved by a
// quarter of itself plus 0.1, in place.
void break_value(const char* target, const char* nodes, const Tensor& t) {
  const char* plus = strchr(nodes, '+');
  const size_t first = plus ? size_t(plus - nodes) : strlen(nodes);
  if (target == nullptr || t.dtype != ScalarType::Float32 || node_kind(nodes, first) != target) return;
  float* x = t.data_as<float>();
  for (int64_t i = 0; i < t.numel; ++i) x[i] = x[i] * 1.25f + 0.1f;
}
#endif

}  // namespace

ValueDump::ValueDump(Method& method, const char* dir) : method_(method), dir_(dir) {
  sink_.fn = on_step;
  sink_.user = this;
  sink_.value = on_step_value;
#ifdef TERN_RUN_TEST_BREAK
  break_ = getenv("TERN_RUN_BREAK");
#endif
  const std::string path = dir_ + "/values.tsv";
  index_ = fopen(path.c_str(), "w");
  if (index_ == nullptr) {
    error_ = "cannot write " + path + ": " + strerror(errno);
    return;
  }
  fprintf(index_, "seq\tinstruction\tkind\top\tnodes\tlayout\tdtype\tshape\tfile\n");
}

ValueDump::~ValueDump() {
  detach();
  if (index_ != nullptr) fclose(index_);
}

void ValueDump::attach() { method_.set_event_hook(on_instruction, this, &sink_); }

void ValueDump::detach() { method_.set_event_hook(nullptr, nullptr); }

bool ValueDump::finish() {
  if (index_ != nullptr && fclose(index_) != 0 && error_.empty()) error_ = "cannot write " + dir_ + "/values.tsv";
  index_ = nullptr;
  return error_.empty();
}

void ValueDump::on_instruction(void* user, size_t instruction, bool begin) {
  ValueDump& d = *static_cast<ValueDump*>(user);
  d.instruction_ = instruction;
  if (begin) return;
  // a backend call's steps came before; a move copies a value dumped already
  if (d.method_.instruction_kind(instruction) != InstructionKind::Kernel) return;
  const Tensor* outs[8];
  const size_t n = d.method_.instruction_outputs(instruction, outs, 8);
  for (size_t j = 0; j < n && j < 8; ++j) {
    d.write("kernel", d.method_.instruction_op(instruction), d.method_.instruction_node(instruction), *outs[j], false);
  }
}

void ValueDump::on_step(void*, const char*, bool) {}

void ValueDump::on_step_value(void* user, const char* name, const Tensor& t, bool channels_last) {
  ValueDump& d = *static_cast<ValueDump*>(user);
  d.write("step", d.method_.instruction_op(d.instruction_), name, t, channels_last);
}

void ValueDump::write(const char* kind, const char* op, const char* nodes, const Tensor& t, bool channels_last) {
#ifdef TERN_RUN_TEST_BREAK
  break_value(break_, nodes, t);
#endif
  if (index_ == nullptr) return;
  char file[32];
  snprintf(file, sizeof(file), "%06zu.npy", seq_);
  const std::string path = dir_ + "/" + file;
  if (write_npy(path.c_str(), t) != Error::Ok) {
    if (error_.empty()) error_ = last_error_message();
    return;
  }
  std::string shape;
  for (int d = 0; d < t.dim; ++d) shape += (d ? "x" : "") + std::to_string(t.sizes[d]);
  fprintf(index_, "%zu\t%zu\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", seq_, instruction_, kind, op, nodes,
          channels_last && t.dim == 4 ? "nhwc" : "plain", scalar_type_name(t.dtype), shape.c_str(), file);
  ++seq_;
}

}  // namespace tern
