// Three methods spinning 1:2:3 units, called from a loop on a pool's threads for SECONDS, as
// `java KnownRatio SECONDS [THREADS]`. Each calls spin() through through(), which is trivial: the
// JIT inlines it into each of them once they are compiled. Halfway through, delta() (1 unit)
// joins the loop: a method compiled mid-session. At its end it prints how many rounds of the loop
// its threads ran, per second: its throughput.
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;

public final class KnownRatio {
  private static volatile long sink;

  static long spin(int units) {
    long total = 0;
    long mixed = units;
    for (int i = 0; i < units * 200_000; i++) {
      total += i % 7;
      mixed = mixed * 31 + (total ^ (mixed >>> 3));
    }
    return total + (mixed & 1);
  }

  static long through(int units) { return spin(units); }

  static long alpha() { return through(1); }

  static long beta() { return through(2); }

  static long gamma() { return through(3); }

  static long delta() { return through(1); }

  static long work(long endNanos, long deltaFromNanos) {
    long total = 0;
    long rounds = 0;
    while (System.nanoTime() < endNanos) {
      total += alpha() + beta() + gamma();
      if (System.nanoTime() >= deltaFromNanos) total += delta();
      ++rounds;
    }
    sink += total;
    return rounds;
  }

  public static void main(String[] args) throws Exception {
    double seconds = args.length > 0 ? Double.parseDouble(args[0]) : 5;
    int threads = args.length > 1 ? Integer.parseInt(args[1]) : 1;
    long start = System.nanoTime();
    long end = start + (long) (seconds * 1e9);
    long deltaFrom = start + (long) (seconds * 0.5e9);
    ExecutorService pool = Executors.newFixedThreadPool(threads);
    List<Future<Long>> running = new ArrayList<>();
    for (int i = 0; i < threads; ++i) running.add(pool.submit(() -> work(end, deltaFrom)));
    long rounds = 0;
    for (Future<Long> each : running) rounds += each.get();
    pool.shutdown();
    System.out.printf("rounds per second %.1f%n", rounds / seconds);
  }
}
