// v61: what the host side of an 8-lane step cost before greedy readback: a 248,320 x 8 f32
// logits read copied into a fresh Vec, then split into one fresh Vec a lane (as
// `download_via` and `per_lane` did). Build: rustc -O host_copies.rs.
use std::time::Instant;
fn main(){
  let n = 8*248320usize;
  let src = vec![1.0f32; n];
  for _ in 0..3 {
  let t = Instant::now();
  let mut tot = 0usize;
  for _ in 0..50 {
    let v = src[..n].to_vec();
    let lanes: Vec<Vec<f32>> = v.chunks(248320).map(<[f32]>::to_vec).collect();
    tot += lanes.len();
  }
  println!("{:.1} us per step copies only ({})", t.elapsed().as_secs_f64()*1e6/50.0, tot);
  }
}
