// SPDX-License-Identifier: Apache-2.0
// ehbt-triage's content key of a file (content_key/sparse_sha256.hpp), at once or on a thread
// of its own (ContentKeyJob).
//
// A triage worker hashes a core while it analyses it, both in C++ with the GIL released. On a
// Python thread that needed the threading module, whose import cost a fresh worker about 2 ms
// before its first core (3.5 ms in a fresh interpreter): a fifth of what the first core of a
// one-shot run costs more than the others. A job goes to a native thread, which takes the GIL
// only to hand the key to its callback.
#include <unistd.h>

#include <condition_variable>
#include <cstring>
#include <deque>
#include <memory>
#include <mutex>
#include <new>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>

#include "bindings.hpp"
#include "sparse_sha256.hpp"

namespace ehbt::py {
namespace {

ContentKeyVersion key_version(int version, const char* who) {
  if (version != 1 && version != 2) {
    throw pyb::value_error(std::string(who) + ": version must be 1 or 2, not " +
                           std::to_string(version));
  }
  return static_cast<ContentKeyVersion>(version);
}

// OSError(errno, strerror, path): what reading the file in Python would raise (with its
// subclass, FileNotFoundError for ENOENT, as Python picks it).
pyb::object os_error(const ContentKeyError& e, const std::string& path) {
  pyb::object cls = pyb::module_::import("builtins").attr("OSError");
  return cls(e.error_number, std::string(strerror(e.error_number)), path);
}

// One key to compute, and who is told: shared by its ContentKeyJob and the key thread.
struct KeyTask {
  std::string path;
  Limits limits;
  ContentKeyVersion version;
  pyb::object then;  // called, then let go, by the key thread under the GIL
  std::mutex mu;
  std::condition_variable cv;
  bool done = false;  // under mu: `then` has returned
};

// The one thread of a process that computes the keys of ContentKeyJobs, started by the first
// job, one job after another. One thread for all of them: starting and joining a thread per
// core cost about 70 us more per core than handing the job over (a worker's steady state is
// about 0.7 ms a core).
class KeyThread {
 public:
  // This process's key thread. A forked child has a copy of its parent's object but not the
  // thread, so it makes its own (the copy, whose mutex the thread may have held at the fork,
  // is never touched again).
  static KeyThread& get() {
    static std::mutex made_mu;
    static KeyThread* made = nullptr;
    static pid_t made_by = 0;
    std::lock_guard<std::mutex> lock(made_mu);  // not shared with a parent's thread
    if (made == nullptr || made_by != getpid()) {
      made = new KeyThread;  // never destroyed: its thread lives as long as the process
      made_by = getpid();
    }
    return *made;
  }

  void submit(std::shared_ptr<KeyTask> task) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      queue_.push_back(std::move(task));
    }
    cv_.notify_one();
  }

 private:
  KeyThread() {
    std::thread([this] { loop(); }).detach();
  }

  [[noreturn]] void loop() {
    // The thread's Python thread state, made once and kept (the GIL let go at once): taking
    // the GIL with a new state for every key cost about 20 us more.
    PyGILState_Ensure();
    PyThreadState* state = PyEval_SaveThread();
    for (;;) {
      std::shared_ptr<KeyTask> task;
      {
        std::unique_lock<std::mutex> lock(mu_);
        cv_.wait(lock, [this] { return !queue_.empty(); });
        task = std::move(queue_.front());
        queue_.pop_front();
      }
      const Outcome out = compute(*task);
      PyEval_RestoreThread(state);  // takes the GIL
      deliver(*task, out);
      state = PyEval_SaveThread();
      {
        std::lock_guard<std::mutex> lock(task->mu);
        task->done = true;
      }
      task->cv.notify_all();
    }
  }

  // The key, or why there is none: an OSError's errno and words, or the name of the Python
  // exception for a failure of another kind.
  struct Outcome {
    std::optional<Expected<std::string, ContentKeyError>> key;
    const char* failure = nullptr;
  };

  // Without the GIL. Nothing may leave the thread's function: an allocation that fails under
  // the worker's RLIMIT_AS is a MemoryError, as content_key raises it.
  static Outcome compute(const KeyTask& task) {
    Outcome out;
    try {
      out.key.emplace(sparse_sha256(task.path, task.limits, task.version));
    } catch (const std::bad_alloc&) {
      out.failure = "MemoryError";
    } catch (const std::exception&) {
      out.failure = "RuntimeError";
    }
    return out;
  }

  // With the GIL.
  static void deliver(KeyTask& task, const Outcome& out) {
    try {
      if (out.failure != nullptr) {
        task.then(pyb::none(), pyb::module_::import("builtins").attr(out.failure)());
      } else if (*out.key) {
        task.then(**out.key, pyb::none());
      } else {
        task.then(pyb::none(), os_error(out.key->error(), task.path));
      }
    } catch (pyb::error_already_set& e) {
      e.discard_as_unraisable("ehbt.ContentKeyJob callback");
    }
    task.then = pyb::object();  // let go under the GIL: the task may outlive its job here
  }

  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::shared_ptr<KeyTask>> queue_;
};

// The key of `path` computed on the process's key thread (KeyThread); `then(digest, error)` is
// called on that thread with the GIL held once it is known: the hex digest and None, or None
// and the OSError content_key would have raised. An exception `then` raises is reported as
// unraisable (sys.unraisablehook), as a thread's would be. wait() returns once `then` has
// returned; so does letting go of the job.
class ContentKeyJob {
 public:
  ContentKeyJob(std::string path, Limits limits, ContentKeyVersion version, pyb::object then)
      : task_(std::make_shared<KeyTask>()) {
    task_->path = std::move(path);
    task_->limits = limits;
    task_->version = version;
    task_->then = std::move(then);
    KeyThread::get().submit(task_);
  }
  ContentKeyJob(const ContentKeyJob&) = delete;
  ContentKeyJob& operator=(const ContentKeyJob&) = delete;

  // The key thread takes the GIL for `then`: it is let go while waiting.
  ~ContentKeyJob() {
    if (PyGILState_Check() != 0) {
      pyb::gil_scoped_release nogil;
      wait_done();
    } else {
      wait_done();
    }
  }

  void wait() {
    pyb::gil_scoped_release nogil;
    wait_done();
  }

 private:
  void wait_done() {
    std::unique_lock<std::mutex> lock(task_->mu);
    task_->cv.wait(lock, [this] { return task_->done; });
  }

  std::shared_ptr<KeyTask> task_;
};

}  // namespace

void bind_content_key(pyb::module_& m) {
  m.def(
      "content_key",
      [](const std::string& path, const pyb::handle& limits, int version) {
        const ContentKeyVersion v = key_version(version, "content_key");
        Limits l = limits_from_py(limits);
        Expected<std::string, ContentKeyError> r = unexpected(ContentKeyError{});
        {
          pyb::gil_scoped_release nogil;
          r = sparse_sha256(path, l, v);
        }
        if (!r) {
          pyb::object e = os_error(r.error(), path);
          PyErr_SetObject(reinterpret_cast<PyObject*>(Py_TYPE(e.ptr())), e.ptr());
          throw pyb::error_already_set();
        }
        return *r;
      },
      pyb::arg("path"), pyb::arg("limits") = pyb::none(), pyb::arg("version") = 2,
      "ehbt-triage's content key of a file: hex SHA-256 of its sparse form\n"
      "(\"ehbt-sparse-sha256/VERSION SIZE\\n\", then offset and bytes of every block that is\n"
      "not all zeros: 4 KiB blocks in version 2, 64 KiB in version 1). Reads only the data\n"
      "extents, without the GIL. Raises OSError, or ValueError for another version.");

  pyb::class_<ContentKeyJob>(m, "ContentKeyJob",
                             "content_key(path, limits, version) computed on a native thread of "
                             "its own, started at once.\n"
                             "then(digest, error) is called on that thread with the GIL held: "
                             "the hex digest and None,\n"
                             "or None and the OSError content_key would raise. wait() returns "
                             "once then() has returned.")
      .def(pyb::init([](const std::string& path, pyb::object then, const pyb::handle& limits,
                        int version) {
             const ContentKeyVersion v = key_version(version, "ContentKeyJob");
             if (!PyCallable_Check(then.ptr())) throw pyb::type_error("then must be callable");
             return std::make_unique<ContentKeyJob>(path, limits_from_py(limits), v,
                                                    std::move(then));
           }),
           pyb::arg("path"), pyb::arg("then"), pyb::arg("limits") = pyb::none(),
           pyb::arg("version") = 2)
      .def("wait", &ContentKeyJob::wait, "Returns once the key is known and then() returned.");
}

}  // namespace ehbt::py
