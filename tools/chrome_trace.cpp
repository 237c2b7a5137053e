#include "tools/chrome_trace.h"

#include <cstdio>
#include <string>

namespace tern {
namespace {

constexpr uint32_t kRun = UINT32_MAX;

// s as a JSON string (quotes included).
std::string json_string(const char* s) {
  std::string out = "\"";
  for (; *s; ++s) {
    const unsigned char c = static_cast<unsigned char>(*s);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c < 0x20) {
      char buf[8];
      snprintf(buf, sizeof(buf), "\\u%04x", c);
      out += buf;
    } else {
      out += static_cast<char>(c);
    }
  }
  return out + "\"";
}

const char* category(InstructionKind k) {
  switch (k) {
    case InstructionKind::Kernel: return "kernel";
    case InstructionKind::BackendCall: return "backend";
    default: return "executor";
  }
}

}  // namespace

ChromeTrace::ChromeTrace(Method& method, size_t runs) : method_(method), t0_(std::chrono::steady_clock::now()) {
  events_.reserve(runs * (method.num_instructions() + 1));
  method_.set_event_hook(&ChromeTrace::hook, this);
}

ChromeTrace::~ChromeTrace() { method_.set_event_hook(nullptr, nullptr); }

int64_t ChromeTrace::now_ns() const {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - t0_).count();
}

void ChromeTrace::hook(void* self, size_t instruction, bool begin) {
  ChromeTrace& t = *static_cast<ChromeTrace*>(self);
  if (!begin) {
    if (t.open_ != SIZE_MAX) t.events_[t.open_].end_ns = t.now_ns();
    t.open_ = SIZE_MAX;
    return;
  }
  if (t.events_.size() == t.events_.capacity()) {
    ++t.dropped_;
    return;
  }
  const int64_t now = t.now_ns();
  t.events_.push_back({now, now, static_cast<uint32_t>(instruction), t.runs_});
  t.open_ = t.events_.size() - 1;
}

void ChromeTrace::begin_run() {
  run_start_ = events_.size();
  if (events_.size() < events_.capacity()) {
    const int64_t now = now_ns();
    events_.push_back({now, now, kRun, runs_});
  } else {
    ++dropped_;
    run_start_ = SIZE_MAX;
  }
}

void ChromeTrace::end_run() {
  if (run_start_ != SIZE_MAX) events_[run_start_].end_ns = now_ns();
  ++runs_;
}

bool ChromeTrace::write(const char* path, const char* process_name) const {
  FILE* f = fopen(path, "w");
  if (f == nullptr) return false;
  fprintf(f, "{\"displayTimeUnit\": \"ms\", \"traceEvents\": [\n");
  fprintf(f, "{\"name\": \"process_name\", \"ph\": \"M\", \"pid\": 1, \"args\": {\"name\": %s}},\n",
          json_string(process_name).c_str());
  fprintf(f, "{\"name\": \"thread_name\", \"ph\": \"M\", \"pid\": 1, \"tid\": 1, \"args\": {\"name\": \"%s, %d thread%s\"}}",
          method_.name(), method_.threads(), method_.threads() == 1 ? "" : "s");
  for (const Event& e : events_) {
    const bool run = e.instruction == kRun;
    const char* name = run ? method_.name() : method_.instruction_op(e.instruction);
    fprintf(f, ",\n{\"name\": %s, \"cat\": \"%s\", \"ph\": \"X\", \"pid\": 1, \"tid\": 1, \"ts\": %.3f, \"dur\": %.3f, "
            "\"args\": {\"run\": %u",
            json_string(name[0] ? name : "move").c_str(), run ? "run" : category(method_.instruction_kind(e.instruction)),
            e.begin_ns / 1e3, (e.end_ns - e.begin_ns) / 1e3, e.run);
    if (!run) {
      fprintf(f, ", \"instruction\": %u, \"node\": %s", e.instruction,
              json_string(method_.instruction_node(e.instruction)).c_str());
    }
    fprintf(f, "}}");
  }
  fprintf(f, "\n]}\n");
  return fclose(f) == 0;
}

}  // namespace tern
