// A libcupti.so.13 (or, built with FAKE_CUPTI_MAJOR=12, a libcupti.so.12 that refuses the launch
// APIs CUDA 13 added) for machines without a GPU, built against CUPTI's real headers: callbacks go
// to one subscriber for the (domain, cbid) it enabled, and records of enabled kinds wait in a queue
// until a flush hands them over in buffers the client gives, as CUPTI does. Environment:
//   FAKE_CUPTI_SUBSCRIBE_FAILS=1   cuptiSubscribe fails as with another subscriber (Nsight)
//   FAKE_CUPTI_DELIVER_AT_ONCE=1   each record is handed over as it is made, before the API exits
//   FAKE_CUPTI_DROP_EVERY=N        every Nth record is dropped (and counted as dropped)
//   FAKE_CUPTI_UNSEEN_EVERY=N      the API calls whose correlation ids are multiples of N have no
//                                  callbacks: their work's records come without a launch
//   FAKE_CUPTI_STATE_FILE=PATH     on SIGUSR1, writes "callbacks=C kinds=K buffers=B" there: the
//                                  callbacks and activity kinds enabled, the buffers the client
//                                  has given and not had back
//   FAKE_CUPTI_FORGE_EVERY=N       of every N kernel records, one claims to last 2^62 ns and the
//                                  next to have run in 1970, as a hostile process's could
//   FAKE_CUPTI_FLOOD=N             each kernel record comes with N more of no launch, as a process
//                                  flooding the agent could send
//   FAKE_CUDA_DEVICES=N            the work of the program's threads goes to N fake GPUs: that of
//                                  its i-th thread to submit any to device i % N, stream 7 + i
//                                  (default: one GPU, every thread's work on stream 7)
// Each fake GPU runs its work back to back, on CUPTI's clock (CLOCK_REALTIME); as on a real one,
// a launch waits while its GPU has more than kQueuedNs of work queued.
#include "fake_cupti.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <cupti.h>
#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

static_assert(int{kFakeDriverApi} == int{CUPTI_CB_DOMAIN_DRIVER_API});
static_assert(int{kFakeRuntimeApi} == int{CUPTI_CB_DOMAIN_RUNTIME_API});
static_assert(int{kFakeApiEnter} == int{CUPTI_API_ENTER} &&
              int{kFakeApiExit} == int{CUPTI_API_EXIT});

namespace {

struct State {
  std::mutex mutex;
  bool subscribed = false;
  std::string subscriber_name;
  CUpti_CallbackFunc callback = nullptr;
  void* userdata = nullptr;
  std::set<std::pair<int, int>> enabled;  // domain, cbid
  CUpti_BuffersCallbackRequestFunc request = nullptr;
  CUpti_BuffersCallbackCompleteFunc complete = nullptr;
  std::set<int> kinds;
  std::vector<std::vector<uint8_t>> queued;  // records, each of its kind's size
  size_t dropped = 0;
  uint64_t made = 0;
  std::vector<uint64_t> gpu_clocks;  // by device: when its queued work ends
  std::set<std::string> names;       // records point at these, as CUPTI's point at its own
};

State& state() {
  static State* the_state = new State();  // never destroyed: callbacks may come during exit
  return *the_state;
}

std::atomic<uint32_t> g_next_correlation{1};
// What the state file reports, kept where a signal handler can read it.
std::atomic<int> g_callbacks_enabled{0};
std::atomic<int> g_kinds_enabled{0};
std::atomic<int> g_buffers_out{0};
const char* g_state_file = nullptr;

// Async-signal-safe: open, write and close, and a number formatted by hand.
void write_state(int) {
  char text[96];
  size_t at = 0;
  auto put = [&](const char* label, int value) {
    for (const char* c = label; *c; ++c) text[at++] = *c;
    char digits[12];
    int n = 0;
    do {
      digits[n++] = static_cast<char>('0' + value % 10);
      value /= 10;
    } while (value > 0 && n < 11);
    while (n > 0) text[at++] = digits[--n];
  };
  put("callbacks=", g_callbacks_enabled.load());
  put(" kinds=", g_kinds_enabled.load());
  put(" buffers=", g_buffers_out.load());
  text[at++] = '\n';
  int fd = ::open(g_state_file, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return;
  ssize_t written = ::write(fd, text, at);
  (void)written;
  ::close(fd);
}

__attribute__((constructor)) void answer_state_requests() {
  g_state_file = std::getenv("FAKE_CUPTI_STATE_FILE");
  if (g_state_file != nullptr) ::signal(SIGUSR1, write_state);
}

bool env_flag(const char* name) {
  const char* value = std::getenv(name);
  return value != nullptr && std::strcmp(value, "1") == 0;
}

// The number the environment gives `name`; 0 without one.
long env_number(const char* name) {
  const char* value = std::getenv(name);
  return value ? std::strtol(value, nullptr, 10) : 0;
}

uint64_t realtime_ns() {
  timespec now;
  clock_gettime(CLOCK_REALTIME, &now);
  return uint64_t(now.tv_sec) * 1000000000ull + uint64_t(now.tv_nsec);
}

void deliver_locked(std::unique_lock<std::mutex>& lock) {
  State& s = state();
  while (!s.queued.empty() && s.request && s.complete) {
    uint8_t* buffer = nullptr;
    size_t size = 0, max_records = 0;
    auto request = s.request;
    auto complete = s.complete;
    lock.unlock();
    request(&buffer, &size, &max_records);
    lock.lock();
    if (buffer == nullptr) {
      s.dropped += s.queued.size();
      s.queued.clear();
      return;
    }
    ++g_buffers_out;
    size_t used = 0;
    size_t taken = 0;
    for (const auto& record : s.queued) {
      if (used + record.size() > size) break;
      std::memcpy(buffer + used, record.data(), record.size());
      used += record.size();
      ++taken;
    }
    s.queued.erase(s.queued.begin(), s.queued.begin() + static_cast<ptrdiff_t>(taken));
    lock.unlock();
    --g_buffers_out;
    complete(nullptr, 0, buffer, size, used);
    lock.lock();
    if (taken == 0) return;  // a buffer too small for one record
  }
}

template <typename Record>
void queue(CUpti_ActivityKind kind, const Record& record) {
  State& s = state();
  std::unique_lock lock(s.mutex);
  if (!s.kinds.contains(kind)) return;
  static const long drop_every = env_number("FAKE_CUPTI_DROP_EVERY");
  ++s.made;
  if (drop_every > 0 && s.made % static_cast<uint64_t>(drop_every) == 0) {
    ++s.dropped;
    return;
  }
  const auto* bytes = reinterpret_cast<const uint8_t*>(&record);
  s.queued.emplace_back(bytes, bytes + sizeof(record));
  static const bool at_once = env_flag("FAKE_CUPTI_DELIVER_AT_ONCE");
  if (at_once) deliver_locked(lock);
}

constexpr uint64_t kQueuedNs = 100'000'000;

struct Placement {
  uint32_t device;
  uint32_t stream;
};

// The device and stream of the calling thread's work.
Placement placement() {
  static const auto devices =
      static_cast<uint32_t>(std::clamp(env_number("FAKE_CUDA_DEVICES"), 0L, 64L));
  static std::atomic<uint32_t> threads{0};
  thread_local const uint32_t thread = threads.fetch_add(1);
  if (devices == 0) return {0, 7};
  return {thread % devices, 7 + thread};
}

// Start and end of the next piece of work on the thread's fake GPU, and its device and stream.
// Returns how long the launch waits for room in the GPU's queue.
template <typename Record>
std::chrono::nanoseconds schedule_locked(Record& record, uint64_t duration_ns) {
  State& s = state();
  Placement where = placement();
  if (s.gpu_clocks.size() <= where.device) s.gpu_clocks.resize(where.device + 1);
  uint64_t& clock = s.gpu_clocks[where.device];
  uint64_t now = realtime_ns();
  uint64_t start = std::max(clock, now);
  clock = start + duration_ns;
  record.start = start;
  record.end = start + duration_ns;
  record.deviceId = where.device;
  record.streamId = where.stream;
  return std::chrono::nanoseconds(clock > now + kQueuedNs ? clock - now - kQueuedNs : 0);
}

template <typename Record>
void schedule_and_wait(Record& record, uint64_t duration_ns) {
  std::chrono::nanoseconds wait;
  {
    std::lock_guard lock(state().mutex);
    wait = schedule_locked(record, duration_ns);
  }
  if (wait.count() > 0) std::this_thread::sleep_for(wait);
}

}  // namespace

extern "C" {

uint32_t fake_cupti_next_correlation_id() { return g_next_correlation.fetch_add(1); }

void fake_cupti_api(int domain, uint32_t cbid, int site, uint32_t correlation_id,
                    const char* symbol) {
  static const long unseen_every = env_number("FAKE_CUPTI_UNSEEN_EVERY");
  if (unseen_every > 0 && correlation_id % static_cast<uint64_t>(unseen_every) == 0) return;
  State& s = state();
  CUpti_CallbackFunc callback;
  void* userdata;
  {
    std::lock_guard lock(s.mutex);
    if (!s.subscribed || !s.enabled.contains({domain, static_cast<int>(cbid)})) return;
    callback = s.callback;
    userdata = s.userdata;
  }
  CUpti_CallbackData data{};
  data.callbackSite = static_cast<CUpti_ApiCallbackSite>(site);
  data.functionName = "fake";
  data.symbolName = symbol;
  data.correlationId = correlation_id;
  callback(userdata, static_cast<CUpti_CallbackDomain>(domain), cbid, &data);
}

void fake_cupti_kernel(uint32_t correlation_id, const char* name, uint64_t duration_ns,
                       uint32_t graph_id) {
  CUpti_ActivityKernel10 record{};
  record.kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
  {
    std::lock_guard lock(state().mutex);
    record.name = state().names.insert(name).first->c_str();
  }
  schedule_and_wait(record, duration_ns);
  record.correlationId = correlation_id;
  record.graphId = graph_id;
  static const long forge_every = env_number("FAKE_CUPTI_FORGE_EVERY");
  static std::atomic<uint64_t> kernels{0};
  uint64_t kernel = kernels.fetch_add(1);
  if (forge_every > 1 && kernel % static_cast<uint64_t>(forge_every) == 0) {
    record.end = record.start + (uint64_t{1} << 62);
  } else if (forge_every > 1 && kernel % static_cast<uint64_t>(forge_every) == 1) {
    record.start = 1'000'000'000;
    record.end = record.start + duration_ns;
  }
  queue(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, record);
  static const long flood = env_number("FAKE_CUPTI_FLOOD");
  for (long extra = 0; extra < flood; ++extra) {  // of no launch: correlation ids never used
    record.correlationId = 0x80000000u | static_cast<uint32_t>(kernel * flood + extra);
    queue(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, record);
  }
}

void fake_cupti_memcpy(uint32_t correlation_id, uint32_t copy_kind, uint64_t bytes,
                       uint64_t duration_ns) {
  CUpti_ActivityMemcpy6 record{};
  record.kind = CUPTI_ACTIVITY_KIND_MEMCPY;
  record.copyKind = static_cast<uint8_t>(copy_kind);
  record.bytes = bytes;
  schedule_and_wait(record, duration_ns);
  record.correlationId = correlation_id;
  queue(CUPTI_ACTIVITY_KIND_MEMCPY, record);
}

void fake_cupti_memset(uint32_t correlation_id, uint64_t bytes, uint64_t duration_ns) {
  CUpti_ActivityMemset4 record{};
  record.kind = CUPTI_ACTIVITY_KIND_MEMSET;
  record.bytes = bytes;
  schedule_and_wait(record, duration_ns);
  record.correlationId = correlation_id;
  queue(CUPTI_ACTIVITY_KIND_MEMSET, record);
}

namespace {

// cuptiSubscribe_v2's `name` ("" for cuptiSubscribe's); on a conflict the current subscriber's
// name goes to `old_name` (FAKE_CUPTI_SUBSCRIBE_FAILS plays Nsight Systems).
CUptiResult subscribe(CUpti_SubscriberHandle* subscriber, CUpti_CallbackFunc callback,
                      void* userdata, const char* name, char* old_name, size_t old_size) {
  State& s = state();
  std::lock_guard lock(s.mutex);
  if (s.subscribed || env_flag("FAKE_CUPTI_SUBSCRIBE_FAILS")) {
    if (old_name != nullptr && old_size > 0) {
      std::snprintf(old_name, old_size, "%s",
                    s.subscribed ? s.subscriber_name.c_str() : "Nsight Systems");
    }
    return CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED;
  }
  s.subscribed = true;
  s.subscriber_name = name;
  s.callback = callback;
  s.userdata = userdata;
  *subscriber = reinterpret_cast<CUpti_SubscriberHandle>(&s);
  return CUPTI_SUCCESS;
}

}  // namespace

CUptiResult cuptiSubscribe(CUpti_SubscriberHandle* subscriber, CUpti_CallbackFunc callback,
                           void* userdata) {
  return subscribe(subscriber, callback, userdata, "", nullptr, 0);
}

#if FAKE_CUPTI_MAJOR != 12  // new in CUDA 13
CUptiResult cuptiSubscribe_v2(CUpti_SubscriberHandle* subscriber, CUpti_CallbackFunc callback,
                              void* userdata, CUpti_SubscriberParams* params) {
  if (params == nullptr) return subscribe(subscriber, callback, userdata, "", nullptr, 0);
  if (params->structSize == 0) return CUPTI_ERROR_INVALID_PARAMETER;
  return subscribe(subscriber, callback, userdata,
                   params->subscriberName ? params->subscriberName : "", params->oldSubscriberName,
                   params->oldSubscriberSize);
}
#endif

CUptiResult cuptiUnsubscribe(CUpti_SubscriberHandle) {
  State& s = state();
  std::lock_guard lock(s.mutex);
  s.subscribed = false;
  s.enabled.clear();
  g_callbacks_enabled = 0;
  return CUPTI_SUCCESS;
}

CUptiResult cuptiEnableCallback(uint32_t enable, CUpti_SubscriberHandle,
                                CUpti_CallbackDomain domain, CUpti_CallbackId cbid) {
#if FAKE_CUPTI_MAJOR == 12
  // CUDA 12's runtime ids end where CUDA 13's new ones begin.
  if (domain == CUPTI_CB_DOMAIN_RUNTIME_API &&
      cbid >= CUPTI_RUNTIME_TRACE_CBID_cudaMemPrefetchBatchAsync_v13000) {
    return CUPTI_ERROR_INVALID_PARAMETER;
  }
#endif
  State& s = state();
  std::lock_guard lock(s.mutex);
  if (enable) {
    s.enabled.insert({domain, static_cast<int>(cbid)});
  } else {
    s.enabled.erase({domain, static_cast<int>(cbid)});
  }
  g_callbacks_enabled = static_cast<int>(s.enabled.size());
  return CUPTI_SUCCESS;
}

CUptiResult cuptiActivityRegisterCallbacks(CUpti_BuffersCallbackRequestFunc request,
                                           CUpti_BuffersCallbackCompleteFunc complete) {
  State& s = state();
  std::lock_guard lock(s.mutex);
  s.request = request;
  s.complete = complete;
  return CUPTI_SUCCESS;
}

CUptiResult cuptiActivityEnable(CUpti_ActivityKind kind) {
  std::lock_guard lock(state().mutex);
  state().kinds.insert(kind);
  g_kinds_enabled = static_cast<int>(state().kinds.size());
  return CUPTI_SUCCESS;
}

CUptiResult cuptiActivityDisable(CUpti_ActivityKind kind) {
  std::lock_guard lock(state().mutex);
  state().kinds.erase(kind);
  g_kinds_enabled = static_cast<int>(state().kinds.size());
  return CUPTI_SUCCESS;
}

CUptiResult cuptiActivityFlushAll(uint32_t) {
  std::unique_lock lock(state().mutex);
  deliver_locked(lock);
  return CUPTI_SUCCESS;
}

CUptiResult cuptiActivityGetNextRecord(uint8_t* buffer, size_t valid_size,
                                       CUpti_Activity** record) {
  size_t at = 0;
  if (*record != nullptr) {
    at = static_cast<size_t>(reinterpret_cast<uint8_t*>(*record) - buffer);
    switch ((*record)->kind) {
      case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL:
        at += sizeof(CUpti_ActivityKernel10);
        break;
      case CUPTI_ACTIVITY_KIND_MEMCPY:
        at += sizeof(CUpti_ActivityMemcpy6);
        break;
      default:
        at += sizeof(CUpti_ActivityMemset4);
        break;
    }
  }
  if (at >= valid_size) return CUPTI_ERROR_MAX_LIMIT_REACHED;
  *record = reinterpret_cast<CUpti_Activity*>(buffer + at);
  return CUPTI_SUCCESS;
}

CUptiResult cuptiActivityGetNumDroppedRecords(CUcontext, uint32_t, size_t* dropped) {
  std::lock_guard lock(state().mutex);
  *dropped = std::exchange(state().dropped, 0);
  return CUPTI_SUCCESS;
}

CUptiResult cuptiGetResultString(CUptiResult result, const char** text) {
  *text = result == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED
              ? "CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED"
              : "fake CUPTI error";
  return CUPTI_SUCCESS;
}
}
