//! The harness's own machinery: a counting global allocator that measures
//! what one call allocates, and a panic guard that keeps the message and the
//! library frames instead of printing them.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::{Cell, RefCell};
use std::panic::{catch_unwind, AssertUnwindSafe};

/// A single allocation above this, in bytes, aborts the run after saving
/// the mutant: the allocation itself would abort the process.
const HARD_CAP: usize = 4 << 30;

struct Counting;

#[global_allocator]
static ALLOC: Counting = Counting;

thread_local! {
    static LIVE: Cell<isize> = const { Cell::new(0) };
    static PEAK: Cell<isize> = const { Cell::new(0) };
    static LARGEST: Cell<usize> = const { Cell::new(0) };
    static ARMED: Cell<bool> = const { Cell::new(false) };
    static MUTANT: Cell<(*const u8, usize)> = const { Cell::new((std::ptr::null(), 0)) };
}

fn note_alloc(size: usize) {
    let _ = LIVE.try_with(|live| {
        let now = live.get() + size as isize;
        live.set(now);
        PEAK.with(|p| p.set(p.get().max(now)));
        LARGEST.with(|l| l.set(l.get().max(size)));
    });
    if size > HARD_CAP && ARMED.try_with(Cell::get).unwrap_or(false) {
        oversize(size);
    }
}

fn note_free(size: usize) {
    let _ = LIVE.try_with(|live| live.set(live.get() - size as isize));
}

/// Saves the mutant being checked and aborts: an allocation this large
/// cannot be reported after the fact.
fn oversize(size: usize) -> ! {
    ARMED.with(|a| a.set(false));
    let (ptr, len) = MUTANT.with(Cell::get);
    // SAFETY: MUTANT is set by `measured` to a slice that outlives the armed window.
    let bytes = unsafe { std::slice::from_raw_parts(ptr, len) };
    let path = std::env::temp_dir().join("ztfs-mutation-oversize.zt");
    let _ = std::fs::write(&path, bytes);
    eprintln!(
        "mutation: a single allocation of {size} bytes for a mutant of {len} bytes; saved to {}",
        path.display()
    );
    std::process::abort()
}

// SAFETY: every method forwards to System unchanged and only counts.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        note_alloc(layout.size());
        System.alloc(layout)
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        note_alloc(layout.size());
        System.alloc_zeroed(layout)
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        System.dealloc(ptr, layout);
        note_free(layout.size());
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // Old and new blocks may both be live during the move.
        note_alloc(new_size);
        note_free(layout.size());
        System.realloc(ptr, layout, new_size)
    }
}

/// What one armed window allocated: peak growth and largest block, in bytes.
pub struct Usage {
    pub peak_growth: usize,
    pub largest: usize,
}

/// Runs `f` with the counters reset and the hard cap armed for `mutant`.
pub fn measured<T>(mutant: &[u8], f: impl FnOnce() -> T) -> (T, Usage) {
    let base = LIVE.with(Cell::get);
    PEAK.with(|p| p.set(base));
    LARGEST.with(|l| l.set(0));
    MUTANT.with(|m| m.set((mutant.as_ptr(), mutant.len())));
    ARMED.with(|a| a.set(true));
    let out = f();
    ARMED.with(|a| a.set(false));
    let usage = Usage {
        peak_growth: (PEAK.with(Cell::get) - base).max(0) as usize,
        largest: LARGEST.with(Cell::get),
    };
    (out, usage)
}

thread_local! {
    static GUARDED: Cell<bool> = const { Cell::new(false) };
    static LAST_PANIC: RefCell<String> = const { RefCell::new(String::new()) };
    /// The library call in progress, named in a panic report.
    static STAGE: Cell<&'static str> = const { Cell::new("") };
}

/// Names the library call about to run, for a panic report.
pub fn stage(name: &'static str) {
    STAGE.with(|s| s.set(name));
}

/// The frames of a backtrace that are in the library, with their lines.
fn library_frames(bt: &str) -> String {
    let lines: Vec<&str> = bt.lines().map(str::trim).collect();
    let mut out = Vec::new();
    for (i, l) in lines.iter().enumerate() {
        let name = l.split_once(": ").map_or("", |(_, n)| n);
        if name.starts_with("ztfs::") && out.len() < 6 {
            let at = lines.get(i + 1).filter(|a| a.starts_with("at "));
            out.push(format!("    {name} {}", at.copied().unwrap_or_default()));
        }
    }
    out.join("\n")
}

/// Installs, once, a hook that keeps a guarded panic's message for
/// [`guarded`] and passes any other panic to the previous hook.
pub fn install_panic_hook() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if GUARDED.with(Cell::get) {
                let bt = std::backtrace::Backtrace::force_capture().to_string();
                let msg = format!(
                    "in {}: {info}\n{}",
                    STAGE.with(Cell::get),
                    library_frames(&bt)
                );
                LAST_PANIC.with(|p| *p.borrow_mut() = msg);
            } else {
                previous(info);
            }
        }));
    });
}

/// Runs `f`, turning a panic into `Err(message)`.
pub fn guarded<T>(f: impl FnOnce() -> T) -> Result<T, String> {
    GUARDED.with(|g| g.set(true));
    let r = catch_unwind(AssertUnwindSafe(f));
    GUARDED.with(|g| g.set(false));
    r.map_err(|_| LAST_PANIC.with(|p| p.borrow().clone()))
}
