#include "runtime/core/log.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace tern {
namespace {

void default_sink(LogLevel level, const char* line) {
  static const char* const kNames[] = {"D", "I", "E", "F"};
  fprintf(stderr, "[tern %s] %s\n", kNames[static_cast<int>(level)], line);
}

LogSink g_sink = default_sink;
LogLevel g_level = LogLevel::Info;
thread_local char t_last_error[512];

const char* basename_of(const char* path) {
  const char* slash = strrchr(path, '/');
  return slash ? slash + 1 : path;
}

void vlog(LogLevel level, const char* file, int line, const char* fmt, va_list ap) {
  char msg[512];
  vsnprintf(msg, sizeof(msg), fmt, ap);
  if (level >= LogLevel::Error) {
    snprintf(t_last_error, sizeof(t_last_error), "%s", msg);
  }
  if (level < g_level) return;
  char full[600];
  snprintf(full, sizeof(full), "%s:%d: %s", basename_of(file), line, msg);
  g_sink(level, full);
}

}  // namespace

void set_log_sink(LogSink sink) { g_sink = sink ? sink : default_sink; }
void set_log_level(LogLevel level) { g_level = level; }
const char* last_error_message() { return t_last_error; }
void clear_last_error() { t_last_error[0] = '\0'; }

void log(LogLevel level, const char* file, int line, const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vlog(level, file, line, fmt, ap);
  va_end(ap);
}

void fatal(const char* file, int line, const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vlog(LogLevel::Fatal, file, line, fmt, ap);
  va_end(ap);
  abort();
}

}  // namespace tern
