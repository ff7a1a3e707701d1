public class QuickStart { public static void main(String[] a) {} }
