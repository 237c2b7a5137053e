// Logging and fatal errors. The application may replace the sink (e.g. to send
// lines to logcat); the default writes to stderr. Logging never allocates.
#pragma once

#include <cstdarg>

namespace tern {

enum class LogLevel { Debug = 0, Info = 1, Error = 2, Fatal = 3 };

// Receives one formatted line (without a trailing newline).
using LogSink = void (*)(LogLevel level, const char* line);

// Replaces the sink; nullptr restores the default (stderr). Not thread-safe:
// call it once at start-up.
void set_log_sink(LogSink sink);

// Lines below this level are dropped. Default: Info.
void set_log_level(LogLevel level);

void log(LogLevel level, const char* file, int line, const char* fmt, ...)
    __attribute__((format(printf, 4, 5)));

// For a broken internal invariant only (never for bad input): logs and aborts.
[[noreturn]] void fatal(const char* file, int line, const char* fmt, ...)
    __attribute__((format(printf, 3, 4)));

// The last error line logged by this thread, or "" (lets bindings and tools
// turn an Error into a message that says what and where).
const char* last_error_message();
// Forgets the last error line of this thread (so a later message is fresh).
void clear_last_error();

}  // namespace tern

#define TERN_LOG_ERROR(...) ::tern::log(::tern::LogLevel::Error, __FILE__, __LINE__, __VA_ARGS__)
#define TERN_LOG_INFO(...) ::tern::log(::tern::LogLevel::Info, __FILE__, __LINE__, __VA_ARGS__)
#define TERN_ABORT(...) ::tern::fatal(__FILE__, __LINE__, __VA_ARGS__)
