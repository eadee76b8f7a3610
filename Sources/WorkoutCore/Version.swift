/// This release's version, as `workoutd --version` and the Debian package say it (a test keeps
/// it equal to debian/changelog's).
public enum WorkoutdVersion {
  public static let string = "0.1.0"
}
