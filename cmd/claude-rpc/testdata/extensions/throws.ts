// A pi extension that fails as it loads.
export default function () {
  throw new Error("this extension fails on purpose");
}
