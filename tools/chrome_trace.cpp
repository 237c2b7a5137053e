#include "tools/chrome_trace.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
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

std::vector<std::pair<std::string, std::string>> delegate_detail_pairs(const Method& method, size_t i) {
  std::string text(method.delegate_details(i, nullptr, 0), '\0');
  method.delegate_details(i, &text[0], text.size() + 1);  // writes the NUL at text.size(), std::string's own
  std::vector<std::pair<std::string, std::string>> pairs;
  for (size_t at = 0; at < text.size();) {
    size_t end = text.find(' ', at);
    if (end == std::string::npos) end = text.size();
    const std::string pair = text.substr(at, end - at);
    const size_t eq = pair.find('=');
    if (eq != std::string::npos) pairs.emplace_back(pair.substr(0, eq), pair.substr(eq + 1));
    at = end + 1;
  }
  return pairs;
}

// Room for this many backend steps per run on top of the instructions.
constexpr size_t kStepsPerRun = 4096;

ChromeTrace::ChromeTrace(Method& method, size_t runs)
    : method_(method), t0_(std::chrono::steady_clock::now()), steps_{&ChromeTrace::step, this} {
  events_.reserve(runs * (method.num_instructions() + 1 + kStepsPerRun));
  method_.set_event_hook(&ChromeTrace::hook, this, &steps_);
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
  t.events_.push_back({now, now, static_cast<uint32_t>(instruction), t.runs_, nullptr});
  t.open_ = t.events_.size() - 1;
}

void ChromeTrace::step(void* self, const char* name, bool begin) {
  ChromeTrace& t = *static_cast<ChromeTrace*>(self);
  if (!begin) {
    if (t.open_step_ != SIZE_MAX) t.events_[t.open_step_].end_ns = t.now_ns();
    t.open_step_ = SIZE_MAX;
    return;
  }
  if (t.events_.size() == t.events_.capacity() || t.open_ == SIZE_MAX) {
    ++t.dropped_;
    return;
  }
  const int64_t now = t.now_ns();
  t.events_.push_back({now, now, t.events_[t.open_].instruction, t.runs_, name});
  t.open_step_ = t.events_.size() - 1;
}

void ChromeTrace::begin_run() {
  run_start_ = events_.size();
  if (events_.size() < events_.capacity()) {
    const int64_t now = now_ns();
    events_.push_back({now, now, kRun, runs_, nullptr});
  } else {
    ++dropped_;
    run_start_ = SIZE_MAX;
  }
}

void ChromeTrace::end_run() {
  if (run_start_ != SIZE_MAX) events_[run_start_].end_ns = now_ns();
  ++runs_;
}

void ChromeTrace::print_profile(FILE* out) const {
  struct Row {
    std::string name;
    double ms = 0;
    size_t count = 0;
  };
  std::vector<Row> rows, steps;
  auto add = [](std::vector<Row>& v, const std::string& name, double ms) {
    auto it = std::find_if(v.begin(), v.end(), [&](const Row& r) { return r.name == name; });
    if (it == v.end()) it = v.insert(v.end(), Row{name});
    it->ms += ms;
    it->count++;
  };
  double total = 0;
  for (const Event& e : events_) {
    const double ms = (e.end_ns - e.begin_ns) / 1e6;
    if (e.instruction == kRun) {
      total += ms;
    } else if (e.step != nullptr) {
      const char* colon = strchr(e.step, ':');
      add(rows, std::string(method_.instruction_op(e.instruction)) + " " + std::string(e.step, colon ? colon - e.step : strlen(e.step)), ms);
      add(steps, e.step, ms);
    } else if (method_.instruction_kind(e.instruction) != InstructionKind::BackendCall) {
      add(rows, method_.instruction_op(e.instruction)[0] ? method_.instruction_op(e.instruction) : "move", ms);
    }
  }
  const double per_run = runs_ ? total / runs_ : 0;
  auto by_time = [](const Row& a, const Row& b) { return a.ms > b.ms; };
  std::sort(rows.begin(), rows.end(), by_time);
  std::sort(steps.begin(), steps.end(), by_time);
  fprintf(out, "profile over %u runs (%.3f ms a run): time per op, kernels by ATen op, backend steps by kind\n", runs_, per_run);
  for (const Row& r : rows) {
    fprintf(out, "  %-44s %5zu x  %9.3f ms  %5.1f%%\n", r.name.c_str(), runs_ ? r.count / runs_ : r.count,
            runs_ ? r.ms / runs_ : r.ms, total > 0 ? 100 * r.ms / total : 0.0);
  }
  if (!steps.empty()) fprintf(out, "slowest backend steps (ms a run):\n");
  for (size_t i = 0; i < steps.size() && i < 12; ++i) {
    fprintf(out, "  %9.3f  %s\n", runs_ ? steps[i].ms / runs_ : steps[i].ms, steps[i].name.c_str());
  }
}

bool ChromeTrace::write(const char* path, const char* process_name) const {
  FILE* f = fopen(path, "w");
  if (f == nullptr) return false;
  fprintf(f, "{\"displayTimeUnit\": \"ms\", \"traceEvents\": [\n");
  fprintf(f, "{\"name\": \"process_name\", \"ph\": \"M\", \"pid\": 1, \"args\": {\"name\": %s}},\n",
          json_string(process_name).c_str());
  fprintf(f, "{\"name\": \"thread_name\", \"ph\": \"M\", \"pid\": 1, \"tid\": 1, \"args\": {\"name\": \"%s, %d thread%s\"}}",
          method_.name(), method_.threads(), method_.threads() == 1 ? "" : "s");
  // What each delegate runs on, as an instant at the start (Perfetto shows
  // its args when clicked): backend, kernel sets, then each detail pair.
  for (size_t d = 0; d < method_.num_delegates(); ++d) {
    const std::string name = std::string(method_.delegate_backend(d)) + " delegate " + std::to_string(d);
    fprintf(f, ",\n{\"name\": %s, \"cat\": \"delegate\", \"ph\": \"i\", \"s\": \"t\", \"pid\": 1, \"tid\": 1, "
            "\"ts\": 0, \"args\": {\"delegate\": %zu, \"backend\": %s, \"description\": %s",
            json_string(name.c_str()).c_str(), d, json_string(method_.delegate_backend(d)).c_str(),
            json_string(method_.delegate_description(d)).c_str());
    for (const auto& kv : delegate_detail_pairs(method_, d)) {
      fprintf(f, ", %s: %s", json_string(kv.first.c_str()).c_str(), json_string(kv.second.c_str()).c_str());
    }
    fprintf(f, "}}");
  }
  for (const Event& e : events_) {
    const bool run = e.instruction == kRun;
    const char* name = run ? method_.name() : e.step ? e.step : method_.instruction_op(e.instruction);
    const char* cat = run ? "run" : e.step ? "backend step" : category(method_.instruction_kind(e.instruction));
    fprintf(f, ",\n{\"name\": %s, \"cat\": \"%s\", \"ph\": \"X\", \"pid\": 1, \"tid\": 1, \"ts\": %.3f, \"dur\": %.3f, "
            "\"args\": {\"run\": %u",
            json_string(name[0] ? name : "move").c_str(), cat, e.begin_ns / 1e3, (e.end_ns - e.begin_ns) / 1e3, e.run);
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
