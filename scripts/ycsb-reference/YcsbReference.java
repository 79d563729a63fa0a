// loadrig's own program (not YCSB's code): draws keys from YCSB 0.17.0's generators, loaded
// from YCSB's core jar as a library, and prints how often each key of 0..999 came up, for the
// tests in src/workload/ycsb/java_reference.rs. scripts/ycsb-reference.sh compiles and runs it.
//
// Usage: java -cp core-0.17.0.jar:BUILD YcsbReference CASE DRAWS COMMAND
// CASE is one of zipfian, scrambled, scrambled_keys, latest, hotspot, exponential; COMMAND is
// the command line written into the header.
//
// YCSB's generators draw from ThreadLocalRandom and cannot be seeded, so the output is an
// empirical frequency, not a fixed sequence.

import java.lang.reflect.Method;
import java.util.Properties;

import site.ycsb.generator.ScrambledZipfianGenerator;
import site.ycsb.generator.ZipfianGenerator;
import site.ycsb.measurements.Measurements;
import site.ycsb.workloads.CoreWorkload;

public final class YcsbReference {
  private static final int KEYS = 1000;

  private interface Source {
    long next() throws Exception;
  }

  /**
   * CoreWorkload's key chooser itself: init() with these properties builds the generator (and
   * its key counter) as a YCSB run does, and nextKeynum() (package-private, hence reflection)
   * applies its redraw loop.
   */
  private static Source coreWorkload(String... properties) throws Exception {
    Properties p = new Properties();
    p.setProperty("recordcount", Integer.toString(KEYS));
    p.setProperty("operationcount", "1000");
    p.setProperty("insertproportion", "0");
    for (int i = 0; i < properties.length; i += 2) {
      p.setProperty(properties[i], properties[i + 1]);
    }
    // CoreWorkload reads the Measurements singleton, which needs its properties first.
    Measurements.setProperties(p);
    CoreWorkload workload = new CoreWorkload();
    workload.init(p);
    Method nextKeynum = CoreWorkload.class.getDeclaredMethod("nextKeynum");
    nextKeynum.setAccessible(true);
    return () -> (Long) nextKeynum.invoke(workload);
  }

  public static void main(String[] args) throws Exception {
    if (args.length != 3) {
      System.err.println("usage: YcsbReference CASE DRAWS COMMAND");
      System.exit(2);
    }
    String which = args[0];
    long draws = Long.parseLong(args[1]);
    String command = args[2];
    String what;
    Source source;
    switch (which) {
      case "zipfian": {
        ZipfianGenerator g = new ZipfianGenerator(0, 999);
        what = "site.ycsb.generator.ZipfianGenerator(0, 999).nextValue() (theta 0.99)";
        source = () -> g.nextValue();
        break;
      }
      case "scrambled": {
        ScrambledZipfianGenerator g = new ScrambledZipfianGenerator(0, 999);
        what = "site.ycsb.generator.ScrambledZipfianGenerator(0, 999).nextValue()";
        source = () -> g.nextValue();
        break;
      }
      case "scrambled_keys":
        what = "site.ycsb.workloads.CoreWorkload.nextKeynum() after init(recordcount=1000,"
            + " operationcount=1000, insertproportion=0, requestdistribution=zipfian):"
            + " ScrambledZipfianGenerator(0, 1000), drawn again while above 999";
        source = coreWorkload("requestdistribution", "zipfian");
        break;
      case "latest":
        what = "site.ycsb.workloads.CoreWorkload.nextKeynum() after init(recordcount=1000,"
            + " operationcount=1000, insertproportion=0, requestdistribution=latest):"
            + " SkewedLatestGenerator(AcknowledgedCounterGenerator(1000)), lastValue() 999";
        source = coreWorkload("requestdistribution", "latest");
        break;
      case "hotspot":
        what = "site.ycsb.workloads.CoreWorkload.nextKeynum() after init(recordcount=1000,"
            + " operationcount=1000, insertproportion=0, requestdistribution=hotspot,"
            + " hotspotdatafraction=0.2, hotspotopnfraction=0.8):"
            + " HotspotIntegerGenerator(0, 999, 0.2, 0.8)";
        source = coreWorkload("requestdistribution", "hotspot",
            "hotspotdatafraction", "0.2", "hotspotopnfraction", "0.8");
        break;
      case "exponential":
        what = "site.ycsb.workloads.CoreWorkload.nextKeynum() after init(recordcount=1000,"
            + " operationcount=1000, insertproportion=0, requestdistribution=exponential,"
            + " exponential.percentile=95, exponential.frac=0.8571428571):"
            + " 999 - (int) ExponentialGenerator(95, 1000 * 0.8571428571).nextValue(),"
            + " drawn again while below 0";
        source = coreWorkload("requestdistribution", "exponential",
            "exponential.percentile", "95", "exponential.frac", "0.8571428571");
        break;
      default:
        throw new IllegalArgumentException("unknown case " + which);
    }
    long[] counts = new long[KEYS];
    for (long i = 0; i < draws; i++) {
      long key = source.next();
      if (key < 0 || key >= KEYS) {
        throw new IllegalStateException(which + " drew " + key + ", outside 0.." + (KEYS - 1));
      }
      counts[(int) key]++;
    }
    StringBuilder out = new StringBuilder();
    out.append("# YCSB 0.17.0 (site.ycsb:core:0.17.0, Java ")
        .append(System.getProperty("java.version")).append("): ").append(what).append('\n');
    out.append("# draws ").append(draws).append("; made by: ").append(command).append('\n');
    out.append("# key count\n");
    for (int k = 0; k < KEYS; k++) {
      out.append(k).append(' ').append(counts[k]).append('\n');
    }
    System.out.print(out);
  }
}
